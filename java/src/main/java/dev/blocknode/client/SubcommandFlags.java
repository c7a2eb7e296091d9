package dev.blocknode.client;

import dev.blocknode.logging.Printable;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The flags of a subcommand ({@code status}, {@code doctor}, ...): {@code --name=value}, {@code --name value} or
 * {@code -o value}, each name from the subcommand's fixed set, and {@code --help}. One parser, so that every
 * subcommand takes its flags alike and refuses an odd argument alike: naming it escaped, as a log line would.
 */
final class SubcommandFlags {

    /** A command line the subcommand cannot run: the message says why, and where to read its help. */
    static final class UsageException extends Exception {
        UsageException(String message) {
            super(message);
        }
    }

    private final boolean help;
    private final Map<String, String> values;
    private final Set<String> switches;
    private final List<String> operands;

    private SubcommandFlags(boolean help, Map<String, String> values, Set<String> switches, List<String> operands) {
        this.help = help;
        this.values = values;
        this.switches = switches;
        this.operands = operands;
    }

    /**
     * @param command the subcommand's name, for its messages ("blocknode status: ...")
     * @param names   every flag it takes, each spelling ({@code -o} and {@code --output} are two)
     */
    static SubcommandFlags parse(String command, List<String> args, Set<String> names) throws UsageException {
        return parse(command, args, names, Set.of(), 0);
    }

    /**
     * As {@link #parse(String, List, Set)}, and also {@code switches} (flags without a value, as {@code --claim})
     * and up to {@code maxOperands} arguments that are not flags ("-" among them: standard input, by custom).
     */
    static SubcommandFlags parse(String command, List<String> args, Set<String> names, Set<String> switches,
                                 int maxOperands) throws UsageException {
        Map<String, String> values = new HashMap<>();
        Set<String> given = new HashSet<>();
        List<String> operands = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            String arg = args.get(i);
            if (arg.equals("--help") || arg.equals("-h")) {
                return new SubcommandFlags(true, Map.of(), Set.of(), List.of());
            }
            if (!arg.startsWith("-") || arg.equals("-")) {
                if (operands.size() == maxOperands) {
                    throw usage(command, "unexpected argument \"" + Printable.escape(arg) + "\"");
                }
                operands.add(arg);
                continue;
            }
            if (switches.contains(arg)) {
                given.add(arg);
                continue;
            }
            int eq = arg.indexOf('=');
            String name = arg.startsWith("--") && eq > 0 ? arg.substring(0, eq) : arg;
            if (!names.contains(name)) {
                throw usage(command, "unknown flag " + Printable.escape(name));
            }
            if (name.length() < arg.length()) {
                values.put(name, arg.substring(eq + 1));
            } else if (i + 1 < args.size()) {
                values.put(name, args.get(++i));
            } else {
                throw usage(command, "flag " + name + " needs a value");
            }
        }
        return new SubcommandFlags(false, values, given, List.copyOf(operands));
    }

    /** Whether the switch {@code name} was given. */
    boolean has(String name) {
        return switches.contains(name);
    }

    /** The arguments that are not flags, in their order. */
    List<String> operands() {
        return operands;
    }

    /** {@code --help} or {@code -h} was given: the subcommand prints its help and does nothing else. */
    boolean help() {
        return help;
    }

    /** The value of the first of these spellings that was given. */
    Optional<String> get(String... spellings) {
        for (String name : spellings) {
            if (values.containsKey(name)) {
                return Optional.of(values.get(name));
            }
        }
        return Optional.empty();
    }

    /** {@code -o}/{@code --output}: {@code json}, or {@code text} (the default) for a person. */
    boolean json(String command) throws UsageException {
        String output = get("-o", "--output").orElse("text");
        if (!output.equals("text") && !output.equals("json")) {
            throw new UsageException("blocknode " + command + ": -o must be text or json, got \""
                    + Printable.escape(output) + "\"");
        }
        return output.equals("json");
    }

    private static UsageException usage(String command, String what) {
        return new UsageException("blocknode " + command + ": " + what + " (see " + command + " --help)");
    }
}
