package dev.blocknode.docs;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * What every fenced block of the user's pages must be. A block gets a language. A block of commands ({@code sh}) or
 * of a file an operator writes ({@code yaml}, {@code toml}, {@code csv}) is marked: {@code checked: CHECKER} naming
 * how it is checked (see {@link #CHECKERS}), or {@code example: REASON}, a reason of a few words. A block of what
 * something prints, a diagram or a query ({@code text}, {@code json}, {@code promql}) needs no marker, but must not
 * hold a line that starts like one of the pages' commands: calling commands output is not a way around a marker.
 * And whatever their marker, the commands keep to what the pages teach: {@code helm template} says
 * {@code --kube-version}, {@code helm upgrade} names a release and a chart and never {@code --reuse-values},
 * {@code make} names the Makefile's targets and variables, and a path into the repository exists.
 */
final class DocRules {

    /** Each checker, the languages it takes, and who runs it. */
    record Checker(Set<String> languages, String runBy) {
    }

    static final String HERE = "run by this test";
    static final String VALIDATE = "run by make validate-deploy (deploy/validate's TestDocs*)";
    static final String KUBE = "the same as what the kube tier runs (test-e2e/kube)";
    static final String RELEASE_CLI = "run by make release-check against the release's image"
            + " (deploy/release/cli-check.sh)";

    static final Map<String, Checker> CHECKERS = Map.of(
            "pv", new Checker(Set.of("sh"), HERE),
            "pv-input", new Checker(Set.of("yaml", "csv"), HERE),
            "pv-output", new Checker(Set.of("yaml", "text"), HERE),
            "deploy-validate", new Checker(Set.of("yaml"), VALIDATE),
            "helm-template", new Checker(Set.of("sh"), VALIDATE),
            "kube", new Checker(Set.of("sh", "toml"), KUBE),
            "release-cli", new Checker(Set.of("sh"), RELEASE_CLI));

    static final Set<String> LANGUAGES = Set.of("sh", "yaml", "toml", "csv", "json", "text", "promql");
    static final Set<String> MARKED = Set.of("sh", "yaml", "toml", "csv");
    private static final int REASON_WORDS = 4;
    private static final Set<String> HELM_VALUE_FLAGS = Set.of("-n", "--namespace", "--version", "-f", "--values",
            "--set", "--set-string", "--set-file", "--set-json", "--timeout", "--kube-version", "--description");
    private static final Set<String> SHELL_KEYWORDS = Set.of("for", "while", "if", "do", "done", "then", "fi");

    private final Predicate<String> makeTarget;
    private final Predicate<String> makeVariable;
    private final Predicate<String> repositoryPath;

    /**
     * @param makeTarget     whether the Makefile has the target
     * @param makeVariable   whether the Makefile or a script it runs reads the variable
     * @param repositoryPath whether the path exists in the repository
     */
    DocRules(Predicate<String> makeTarget, Predicate<String> makeVariable, Predicate<String> repositoryPath) {
        this.makeTarget = makeTarget;
        this.makeVariable = makeVariable;
        this.repositoryPath = repositoryPath;
    }

    List<String> problems(List<DocPage> pages) {
        List<String> problems = new ArrayList<>();
        Set<String> commandWords = commandWords(pages);
        for (DocPage page : pages) {
            problems.addAll(page.problems());
            for (DocPage.Block block : page.blocks()) {
                if (block.language().equals("sh")) {
                    try {
                        ShellScript.parse(block.text());
                    } catch (IllegalArgumentException e) {
                        problems.add(block.where() + ": not shell this test can read: " + e.getMessage());
                        continue;
                    }
                    problems.addAll(commandProblems(block.where(), ShellScript.parse(block.text()).commands(), false));
                }
                problems.addAll(markerProblems(block, commandWords));
            }
            for (DocPage.Inline inline : page.inlines()) {
                problems.addAll(inlineProblems(inline));
            }
        }
        return problems;
    }

    /**
     * A command of the prose ({@code `helm upgrade ...`}) keeps the same rules as the blocks' when it is one an
     * operator could paste: a make target, or helm or kubectl with arguments (not {@code `helm template`}, which
     * names the command).
     */
    private List<String> inlineProblems(DocPage.Inline inline) {
        List<ShellScript.Command> commands;
        try {
            commands = ShellScript.parse(inline.text()).commands();
        } catch (IllegalArgumentException e) {
            return List.of(); // not shell: a value, a path, a message
        }
        List<ShellScript.Command> pasteable = commands.stream().filter(c -> switch (program(c)) {
            case "make" -> true;
            case "helm", "kubectl" -> c.words().size() > 2;
            default -> false;
        }).toList();
        return commandProblems(inline.where(), pasteable, true);
    }

    /** The first word of every command the pages' sh blocks run (kubectl, helm, make, blocknode, ...). */
    static Set<String> commandWords(List<DocPage> pages) {
        Set<String> words = new TreeSet<>(Set.of("kubectl", "helm", "make", "blocknode"));
        for (DocPage page : pages) {
            for (DocPage.Block block : page.blocks()) {
                if (block.language().equals("sh")) {
                    try {
                        ShellScript.parse(block.text()).commands().stream().map(DocRules::program)
                                .filter(w -> !w.isEmpty() && !SHELL_KEYWORDS.contains(w)).forEach(words::add);
                    } catch (IllegalArgumentException e) {
                        // reported by problems()
                    }
                }
            }
        }
        return words;
    }

    /** The command's program: its first word after any VAR=value. */
    static String program(ShellScript.Command command) {
        return command.words().stream().filter(w -> !w.matches("[A-Za-z_][A-Za-z0-9_]*=.*")).findFirst().orElse("");
    }

    private List<String> markerProblems(DocPage.Block block, Set<String> commandWords) {
        String where = block.where();
        if (!LANGUAGES.contains(block.language())) {
            return List.of(where + ": a code block needs a language, one of " + new TreeSet<>(LANGUAGES)
                    + " (sh: commands; yaml, toml, csv: a file; text, json, promql: output, a diagram, a query)");
        }
        switch (block.kind()) {
            case EXAMPLE -> {
                return block.marker().split("\\s+").length < REASON_WORDS ? List.of(where
                        + ": an example: marker needs its reason (what it needs that no test here has), not \""
                        + block.marker() + "\"") : List.of();
            }
            case CHECKED -> {
                Checker checker = CHECKERS.get(block.checker());
                if (checker == null) {
                    return List.of(where + ": checked: names no checker this test knows: " + block.marker()
                            + " (known: " + new TreeSet<>(CHECKERS.keySet()) + ")");
                }
                if (!checker.languages().contains(block.language())) {
                    return List.of(where + ": checked: " + block.checker() + " takes " + checker.languages()
                            + " blocks, not " + block.language());
                }
                return argumentProblems(block);
            }
            default -> {
                if (MARKED.contains(block.language())) {
                    return List.of(where + ": a " + block.language() + " block an operator runs or writes needs"
                            + " <!-- checked: HOW --> or <!-- example: WHY --> on the line before it");
                }
                return block.text().lines().map(String::strip)
                        .filter(line -> commandWords.contains(line.split("\\s+")[0]))
                        .map(line -> where + ": a " + block.language() + " block holds a command (" + line
                                + "): make it an sh block with its marker").toList();
            }
        }
    }

    private static List<String> argumentProblems(DocPage.Block block) {
        String args = block.checkerArgs();
        String where = block.where() + ": checked: " + block.checker();
        return switch (block.checker()) {
            case "kube" -> args.isEmpty() ? List.of(where + " needs the tier's function(s) it runs") : List.of();
            case "pv-input" -> args.matches("[\\w.-]+\\.(yaml|csv)( refused)?") ? List.of()
                    : List.of(where + " needs the file the block is part of (luns.yaml, luns.csv), not: " + args);
            case "pv-output" -> args.startsWith("blocknode pv") ? List.of()
                    : List.of(where + " needs the blocknode pv command whose output the block shows");
            case "helm-template" -> ShellScript.parse(block.text()).commands().stream()
                    .filter(c -> !c.words().subList(0, Math.min(2, c.words().size())).equals(List.of("helm", "template")))
                    .map(c -> where + " runs helm template commands only, not `" + c.text() + "`").toList();
            default -> args.isEmpty() ? List.of() : List.of(where + " takes no arguments: " + args);
        };
    }

    /** The rules every command of the pages keeps, run or not; a command of the prose may elide words with "...". */
    private List<String> commandProblems(String location, List<ShellScript.Command> commands, boolean inline) {
        List<String> problems = new ArrayList<>();
        for (ShellScript.Command command : commands) {
            List<String> words = command.words();
            if (inline && words.stream().anyMatch(w -> w.contains("..."))) {
                continue;
            }
            String where = location + ": `" + command.text() + "`";
            String program = program(command);
            if (program.equals("helm") && words.size() > 1 && words.get(1).equals("template")
                    && words.stream().noneMatch(w -> w.equals("--kube-version") || w.startsWith("--kube-version="))) {
                problems.add(where + ": helm template without --kube-version renders for Kubernetes v1.20 (helm's"
                        + " default when it was built without its release's flags), which the chart refuses");
            }
            if (program.equals("helm") && words.size() > 1 && words.get(1).equals("upgrade")) {
                if (positionals(words.subList(2, words.size())) < 2) {
                    problems.add(where + ": helm upgrade names its release and its chart");
                }
                if (words.contains("--reuse-values")) {
                    problems.add(where + ": --reuse-values keeps the previous chart's defaults (its image among"
                            + " them): --reset-then-reuse-values, or -f with helm get values (docs/operations.md)");
                }
            }
            if (program.equals("make")) {
                for (String word : words) {
                    String name = word.contains("=") ? word.substring(0, word.indexOf('=')) : null;
                    if (name != null && name.matches("[A-Z_][A-Z0-9_]*") && !makeVariable.test(name)) {
                        problems.add(where + ": " + name + " is read neither by the Makefile nor by a script");
                    } else if (name == null && !word.equals("make") && !word.startsWith("-") && !makeTarget.test(word)) {
                        problems.add(where + ": the Makefile has no target " + word);
                    }
                }
            }
            for (int i = 0; i < words.size(); i++) {
                String word = words.get(i);
                if (program.equals("kubectl") && (i == 0 || !Set.of("-f", "--filename").contains(words.get(i - 1)))) {
                    continue; // deploy/NAME is kubectl's Deployment, not a file
                }
                String path = word.startsWith("./") ? word.substring(2) : word;
                if (path.matches("(deploy|docs|test-e2e|scripts|proto|java|native)/[^$*]*") && !repositoryPath.test(path)) {
                    problems.add(where + ": " + path + " is not in the repository");
                }
            }
        }
        return problems;
    }

    private static int positionals(List<String> words) {
        int count = 0;
        for (int i = 0; i < words.size(); i++) {
            if (!words.get(i).startsWith("-") && (i == 0 || !HELM_VALUE_FLAGS.contains(words.get(i - 1)))) {
                count++;
            }
        }
        return count;
    }
}
