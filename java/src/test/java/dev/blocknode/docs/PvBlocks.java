package dev.blocknode.docs;

import dev.blocknode.client.PvCommand;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Runs one page's {@code blocknode pv} blocks through the real {@link PvCommand}, in a directory of the page's own:
 * <ul>
 *   <li>{@code checked: pv-input FILE}: a LUN list (yaml or csv) that must pass alone; the page's blocks naming one
 *       FILE together are that file, which the page's commands read;</li>
 *   <li>{@code checked: pv}: commands, each of which must be one of: {@code cat > FILE <<'TAG'} (writes FILE),
 *       {@code blocknode pv ...} or {@code java -jar blocknode.jar pv ...} (with {@code < FILE} and {@code > FILE}),
 *       optionally run in the plugin's container ({@code kubectl ... exec ... -- blocknode pv ...}: the test runs what
 *       the container would), which must print its PVs; and {@code .tools/bin/deploy-validate -pv FILE...}, whose
 *       files are kept under {@code deploy/validate/testdata/doc-pvs/PAGE/} for deploy/validate's test to check as
 *       that command does. Anything else fails: such a line belongs in an {@code example:} block;</li>
 *   <li>{@code checked: pv-output blocknode pv ARGS}: text that what that command prints must contain (standard
 *       output when it prints, standard error when it refuses).</li>
 * </ul>
 */
final class PvBlocks {

    private final Path dir;
    private final Map<String, String> validated = new LinkedHashMap<>();
    private final List<String> problems = new ArrayList<>();

    PvBlocks(Path dir) {
        this.dir = dir;
    }

    /** The files a {@code deploy-validate -pv} line of the page validated, by name, as they were then. */
    Map<String, String> validated() {
        return validated;
    }

    List<String> problems() {
        return problems;
    }

    /** The page's LUN lists first (the commands read them), then its commands and outputs, in page order. */
    void run(List<DocPage.Block> blocks) throws IOException {
        Map<String, StringBuilder> inputs = new LinkedHashMap<>();
        for (DocPage.Block block : blocks) {
            if (block.checker().equals("pv-input")) {
                String[] args = block.checkerArgs().split("\\s+");
                String file = args[0];
                boolean refused = args.length > 1 && args[1].equals("refused");
                String format = file.endsWith(".csv") ? "csv" : "yaml";
                Result alone = pv(List.of("--format", format, "-"), block.text());
                if (alone.code != (refused ? PvCommand.REFUSED : PvCommand.PRINTED)) {
                    problems.add(block.where() + ": blocknode pv exits " + alone.code + " for the LUN list, not "
                            + (refused ? "1 (a row refused)" : "0") + ": " + alone.err);
                }
                inputs.computeIfAbsent(file, f -> new StringBuilder()).append(block.text());
            }
        }
        for (Map.Entry<String, StringBuilder> input : inputs.entrySet()) {
            Files.writeString(dir.resolve(input.getKey()), input.getValue());
        }
        for (DocPage.Block block : blocks) {
            switch (block.checker()) {
                case "pv" -> runCommands(block);
                case "pv-output" -> checkOutput(block);
                default -> { }
            }
        }
    }

    private void runCommands(DocPage.Block block) throws IOException {
        ShellScript script = ShellScript.parse(block.text());
        Map<ShellScript.Command, String> hereDocs = new LinkedHashMap<>();
        script.hereDocs().forEach(h -> hereDocs.put(h.command(), h.body()));
        for (ShellScript.Command command : script.commands()) {
            List<String> words = command.words();
            String where = block.where() + " `" + command.text() + "`";
            if (hereDocs.containsKey(command) && words.getFirst().equals("cat")) {
                Files.writeString(dir.resolve(target(words, ">", where)), hereDocs.get(command));
            } else if (words.getFirst().endsWith("deploy-validate") && words.size() > 2 && words.get(1).equals("-pv")) {
                for (String file : words.subList(2, words.size())) {
                    Path path = dir.resolve(file);
                    if (!Files.exists(path)) {
                        problems.add(where + ": " + file + " was not written before it is validated");
                    } else {
                        validated.put(file, Files.readString(path));
                    }
                }
            } else {
                List<String> pv = pvArguments(words);
                if (pv == null) {
                    problems.add(where + ": not a command this test runs (cat > FILE <<TAG, blocknode pv,"
                            + " deploy-validate -pv): move it to an example block, with the reason it cannot run");
                    continue;
                }
                String stdin = words.contains("<") ? Files.readString(dir.resolve(target(words, "<", where))) : "";
                Result result = pv(pv, stdin);
                if (result.code != PvCommand.PRINTED) {
                    problems.add(where + ": blocknode pv exits " + result.code + ": " + result.err);
                } else if (words.contains(">")) {
                    Files.writeString(dir.resolve(target(words, ">", where)), result.out);
                }
            }
        }
    }

    private void checkOutput(DocPage.Block block) {
        List<ShellScript.Command> commands = ShellScript.parse(block.checkerArgs()).commands();
        List<String> pv = commands.size() == 1 ? pvArguments(commands.getFirst().words()) : null;
        if (pv == null) {
            problems.add(block.where() + ": checked: pv-output needs one blocknode pv command, not: "
                    + block.checkerArgs());
            return;
        }
        Result result = pv(pv, "");
        String shown = result.code == PvCommand.PRINTED ? result.out : result.err;
        if (!shows(shown, block.text())) {
            problems.add(block.where() + ": not what `" + block.checkerArgs() + "` prints now; it prints:\n" + shown);
        }
    }

    /**
     * Whether the output shows the block: the block's text as it is, or, where the block cuts a line short with
     * "...", its lines in order, each "..." standing for the rest of what the line says.
     */
    static boolean shows(String output, String block) {
        if (!block.contains("...")) {
            return output.contains(block);
        }
        List<String> lines = output.lines().toList();
        int from = 0;
        for (String line : block.lines().toList()) {
            Pattern pattern = Pattern.compile(String.join(".*",
                    Arrays.stream(line.split("\\.\\.\\.", -1)).map(Pattern::quote).toList()));
            while (from < lines.size() && !pattern.matcher(lines.get(from)).matches()) {
                from++;
            }
            if (from++ == lines.size()) {
                return false;
            }
        }
        return true;
    }

    /** The arguments after {@code pv} of a blocknode pv command (run in the plugin's container or not), or null. */
    private List<String> pvArguments(List<String> words) {
        int from = 0;
        if (words.getFirst().equals("kubectl") && words.contains("exec") && words.contains("--")) {
            from = words.indexOf("--") + 1;
        }
        List<String> rest = words.subList(from, words.size());
        int pv;
        if (rest.size() >= 2 && rest.get(0).equals("blocknode") && rest.get(1).equals("pv")) {
            pv = 2;
        } else if (rest.size() >= 4 && rest.subList(0, 4).equals(List.of("java", "-jar", "blocknode.jar", "pv"))) {
            pv = 4;
        } else {
            return null;
        }
        List<String> args = new ArrayList<>();
        for (int i = pv; i < rest.size(); i++) {
            String word = rest.get(i);
            if (word.equals("<") || word.equals(">")) {
                i++; // the redirection's file
            } else if (!word.equals("-") && !word.startsWith("-") && !isFlagValue(rest, i)) {
                args.add(dir.resolve(word).toString()); // a file the page wrote
            } else {
                args.add(word);
            }
        }
        return args;
    }

    private static boolean isFlagValue(List<String> words, int i) {
        return i > 0 && List.of("--driver-name", "--namespace", "--format").contains(words.get(i - 1));
    }

    private String target(List<String> words, String redirection, String where) {
        int at = words.indexOf(redirection);
        if (at < 0 || at + 1 >= words.size()) {
            throw new IllegalArgumentException(where + ": no file after " + redirection);
        }
        return words.get(at + 1);
    }

    private record Result(int code, String out, String err) {
    }

    /** PvCommand as the jar runs it; the page's directory is taken out of what it prints, as a shell in it would. */
    private Result pv(List<String> args, String stdin) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        InputStream in = new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8));
        int code = PvCommand.run(args, in, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        String prefix = dir.toString() + "/";
        return new Result(code, out.toString(StandardCharsets.UTF_8).replace(prefix, ""),
                err.toString(StandardCharsets.UTF_8).replace(prefix, ""));
    }
}
