package dev.blocknode.volume.filesystem;

import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * An SELinux security context as a mount option carries it ({@code context=}, {@code fscontext=},
 * {@code defcontext=}, {@code rootcontext=}), in the raw form the kernel reads: {@code user:role:type[:range]},
 * where the range is an MLS/MCS level or two joined by '-' and a level is a sensitivity with, after a colon, a
 * category set ({@code s0:c1,c2}, {@code s0-s0:c0.c1023}). kubelet writes it in double quotes
 * ({@code context="system_u:object_r:container_file_t:s0:c1,c2"}); a context without a comma may come bare.
 *
 * <p>The grammar is strict on purpose: the value goes into mount(2)'s data string, where a stray quote or comma
 * would end the option and start another, and it is named in status messages and logs. A context that passed
 * it holds only letters, digits and {@code _ . - : ,}, at most {@link #MAX_LENGTH} characters, so it may be
 * shown; a label is no secret. Translated names (mcstrans' "SystemLow") are refused: the kernel takes raw
 * contexts only.
 */
public record SecurityContext(String user, String role, String type, String range) {

    /** Longer than any context kubelet writes (about 60 characters) by far, and bounded for the logs. */
    public static final int MAX_LENGTH = 255;

    /** The LSM's context mount options, each of which takes a context as its value. */
    public static final List<String> MOUNT_OPTIONS = List.of("context", "fscontext", "defcontext", "rootcontext");

    private static final String IDENTIFIER = "[A-Za-z][A-Za-z0-9_.-]{0,63}";
    private static final String CATEGORIES = "c[0-9]{1,4}(\\.c[0-9]{1,4})?(,c[0-9]{1,4}(\\.c[0-9]{1,4})?)*";
    private static final String LEVEL = "s[0-9]{1,4}(:" + CATEGORIES + ")?";
    private static final Pattern CONTEXT = Pattern.compile("(" + IDENTIFIER + "):(" + IDENTIFIER + "):("
            + IDENTIFIER + ")(:(" + LEVEL + "(-" + LEVEL + ")?))?");

    /** The context as the kernel reads it, without quotes: {@code user:role:type[:range]}. */
    @Override
    public String toString() {
        return user + ":" + role + ":" + type + (range.isEmpty() ? "" : ":" + range);
    }

    /**
     * The context of a mount option's value, quoted or bare; empty when it is none (a comma outside quotes,
     * a quote inside them, anything the grammar above does not take, too long).
     */
    public static Optional<SecurityContext> parse(String optionValue) {
        boolean quoted = optionValue.length() >= 2 && optionValue.startsWith("\"") && optionValue.endsWith("\"");
        String context = quoted ? optionValue.substring(1, optionValue.length() - 1) : optionValue;
        if (context.length() > MAX_LENGTH || context.contains("\"") || (!quoted && context.contains(","))) {
            return Optional.empty();
        }
        var m = CONTEXT.matcher(context);
        if (!m.matches()) {
            return Optional.empty();
        }
        return Optional.of(new SecurityContext(m.group(1), m.group(2), m.group(3),
                m.group(5) == null ? "" : m.group(5)));
    }

    /**
     * The {@code context=} of a mount's data options (as {@code MountOptions} left them), which labels every file
     * of the filesystem; empty when there is none. The options were checked ({@link #checkOptions}).
     */
    public static Optional<SecurityContext> mountContextOf(List<String> data) {
        return data.stream().filter(o -> o.startsWith("context=")).findFirst()
                .flatMap(o -> parse(o.substring("context=".length())));
    }

    /**
     * The combinations of context options SELinux refuses at mount time with EINVAL, refused before anything is
     * formatted: one option of each name, and not both {@code context=} and {@code defcontext=} (one labels every
     * file, the other only unlabelled ones).
     *
     * @throws IllegalArgumentException naming the options (never their values)
     */
    static void checkOptions(List<String> data) {
        for (String name : MOUNT_OPTIONS) {
            long count = data.stream().filter(o -> o.startsWith(name + "=")).count();
            if (count > 1) {
                throw new IllegalArgumentException("mount option " + name + "= is given " + count
                        + " times; SELinux takes one");
            }
        }
        if (data.stream().anyMatch(o -> o.startsWith("context="))
                && data.stream().anyMatch(o -> o.startsWith("defcontext="))) {
            throw new IllegalArgumentException("mount options context= and defcontext= do not go together:"
                    + " SELinux refuses a mount with both");
        }
    }
}
