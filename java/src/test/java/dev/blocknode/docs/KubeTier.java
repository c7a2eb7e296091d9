package dev.blocknode.docs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The Kubernetes tier's shell functions (test-e2e/kube/*.sh and its scenarios), against which a doc block marked
 * {@code checked: kube FUNCTION...} is compared: each of the block's commands must be the start of a command one of
 * those functions runs against the tier's real cluster (the tier may add flags for its cluster after the doc's
 * words, never change them), and a file's text (a {@code toml} block) must be, line by line in order, in a
 * here-document those functions write. The tier's own names for an operator's values are read as the doc's
 * placeholders ({@link #PLACEHOLDERS}); nothing else is translated.
 */
final class KubeTier {

    /** The tier's spelling of what a doc writes as a placeholder, longest first. */
    static final Map<String, String> PLACEHOLDERS = placeholders();

    private static final Pattern FUNCTION = Pattern.compile("^([a-z_][a-z0-9_]*)\\(\\)\\s*\\{.*$");

    private final Map<String, String> functions;

    private KubeTier(Map<String, String> functions) {
        this.functions = functions;
    }

    private static Map<String, String> placeholders() {
        Map<String, String> map = new LinkedHashMap<>();
        map.put("$WORK/containerd", "/etc/containerd"); // the tier's containerd directory stands for a node's /etc/containerd
        map.put("${REGISTRY}", "REGISTRY");
        map.put("$REGISTRY", "REGISTRY");
        map.put("${RELEASE_VERSION}", "X.Y.Z");
        map.put("$RELEASE_VERSION", "X.Y.Z");
        map.put("$NEW_VERSION", "NEW"); // the upgrade scenario's release to upgrade to, the upgrade page's NEW
        return map;
    }

    static KubeTier ofFunctions(Map<String, String> functions) {
        return new KubeTier(Map.copyOf(functions));
    }

    static KubeTier load(Path repository) throws IOException {
        Map<String, String> functions = new LinkedHashMap<>();
        Path kube = repository.resolve("test-e2e/kube");
        List<Path> scripts;
        try (Stream<Path> files = Files.walk(kube)) {
            scripts = files.filter(f -> f.toString().endsWith(".sh")).sorted().toList();
        }
        for (Path script : scripts) {
            functions.putAll(functionsOf(Files.readString(script)));
        }
        return new KubeTier(functions);
    }

    /** The functions of a script, by name: the lines between {@code name() {} and the first line that is "}". */
    static Map<String, String> functionsOf(String script) {
        Map<String, String> functions = new LinkedHashMap<>();
        String[] lines = script.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            Matcher m = FUNCTION.matcher(lines[i]);
            if (!m.matches()) {
                continue;
            }
            StringBuilder body = new StringBuilder();
            String rest = lines[i].substring(lines[i].indexOf('{') + 1).strip();
            if (rest.endsWith("}")) { // a one-line function: name() { commands; }
                functions.put(m.group(1), rest.substring(0, rest.length() - 1) + "\n");
                continue;
            }
            while (++i < lines.length && !lines[i].equals("}")) {
                body.append(lines[i]).append('\n');
            }
            functions.put(m.group(1), body.toString());
        }
        return functions;
    }

    /** What is wrong with the block's claim that the named functions run it; empty when they do. */
    List<String> problems(DocPage.Block block) {
        List<String> names = List.of(block.checkerArgs().split("\\s+"));
        List<String> problems = new ArrayList<>();
        List<ShellScript> scripts = new ArrayList<>();
        for (String name : names) {
            String body = functions.get(name);
            if (body == null) {
                problems.add(block.where() + ": checked: kube names " + name + ", which no test-e2e/kube script defines");
                continue;
            }
            try {
                scripts.add(ShellScript.parse(body));
            } catch (IllegalArgumentException e) {
                problems.add(block.where() + ": test-e2e/kube's " + name + " cannot be read: " + e.getMessage());
            }
        }
        if (!problems.isEmpty()) {
            return problems;
        }
        if (block.language().equals("sh")) {
            List<List<String>> run = new ArrayList<>();
            scripts.forEach(script -> script.commands().forEach(c -> collect(c.words(), run)));
            for (ShellScript.Command command : ShellScript.parse(block.text()).commands()) {
                List<String> doc = command.words();
                if (run.stream().noneMatch(c -> c.size() >= doc.size() && c.subList(0, doc.size()).equals(doc))) {
                    problems.add(block.where() + ": `" + command.text() + "` is not the start of a command "
                            + String.join(" or ", names) + " runs (test-e2e/kube)");
                }
            }
        } else if (scripts.stream().flatMap(s -> s.hereDocs().stream()).noneMatch(h -> holdsInOrder(h, block.text()))) {
            problems.add(block.where() + ": its lines are not, in order, in a file " + String.join(" or ", names)
                    + " writes (test-e2e/kube)");
        }
        return problems;
    }

    /**
     * The commands the tier runs, as the docs would write them: each command; the kubectl ({@code kc}) or helm
     * ({@code helm_kc}) command a helper runs ({@code wait_until "..." 60 kc ...}); and those of its $(...).
     */
    private static void collect(List<String> words, List<List<String>> run) {
        for (int i = 0; i < words.size(); i++) {
            String word = words.get(i);
            if (i == 0 || word.equals("kc") || word.equals("helm_kc")) {
                List<String> command = new ArrayList<>(words.subList(i, words.size()).stream()
                        .map(KubeTier::asDocWrites).toList());
                command.set(0, word.equals("kc") ? "kubectl" : word.equals("helm_kc") ? "helm" : command.getFirst());
                run.add(command);
            }
            for (int at = word.indexOf("$("); at >= 0; at = word.indexOf("$(", at + 2)) {
                try {
                    String inner = word.substring(at + 2, ShellScript.closingParenthesis(word, at + 1));
                    ShellScript.parse(inner).commands().forEach(c -> collect(c.words(), run));
                } catch (IllegalArgumentException e) {
                    break; // not a command substitution this reads: the tier's other commands still count
                }
            }
        }
    }

    private static boolean holdsInOrder(ShellScript.HereDoc file, String docText) {
        List<String> written = significantLines(asDocWrites(file.body()));
        int from = 0;
        for (String line : significantLines(docText)) {
            int found = written.subList(from, written.size()).indexOf(line);
            if (found < 0) {
                return false;
            }
            from += found + 1;
        }
        return true;
    }

    private static List<String> significantLines(String text) {
        return text.lines().map(String::strip).filter(l -> !l.isEmpty() && !l.startsWith("#")).toList();
    }

    static String asDocWrites(String tierText) {
        String text = tierText;
        for (Map.Entry<String, String> e : PLACEHOLDERS.entrySet()) {
            text = text.replace(e.getKey(), e.getValue());
        }
        return text;
    }
}
