package dev.blocknode.volume.filesystem;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * A volume's own mkfs options (volume_context {@code mkfsOptions}), as {@code -X value} pairs separated by
 * spaces, checked against an allow-list per filesystem: only options that shape the new filesystem (block and
 * inode sizes, features, stripe geometry, a label) pass. Nothing that forces over a filesystem, makes none (a dry
 * run), writes only superblocks, or names anything outside the volume (a journal or log device, a file, a
 * directory to copy in) is ever allowed, so the options can neither destroy data nor point mkfs elsewhere.
 */
public record MkfsOptions(List<Option> options) {

    /** One option letter and its value: every allowed option takes exactly one. */
    public record Option(String flag, String value) {
    }

    public static final MkfsOptions NONE = new MkfsOptions(List.of());
    public static final int MAX_LENGTH = 512;
    public static final int MAX_OPTIONS = 16;

    /** A value: letters, digits and the punctuation the allowed options use; never an option itself. */
    private static final Pattern VALUE = Pattern.compile("[A-Za-z0-9_.,=:^+][A-Za-z0-9_.,=:^+-]{0,127}");

    private record Grammar(Predicate<String> accepts, String describe) {
    }

    public MkfsOptions {
        options = List.copyOf(options);
    }

    /**
     * Parses and checks {@code text} for {@code type}.
     *
     * @throws IllegalArgumentException naming the first option that is not allowed, and why; values are not echoed
     */
    public static MkfsOptions parse(String text, FilesystemType type) {
        if (text.length() > MAX_LENGTH) {
            throw new IllegalArgumentException(text.length() + " characters; at most " + MAX_LENGTH);
        }
        String[] words = text.strip().isEmpty() ? new String[0] : text.strip().split("[ \t]+");
        if (words.length > 2 * MAX_OPTIONS) {
            throw new IllegalArgumentException("more than " + MAX_OPTIONS + " options");
        }
        List<Option> options = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < words.length; i += 2) {
            String flag = words[i];
            if (!flag.matches("-[A-Za-z]")) {
                throw new IllegalArgumentException("word " + (i + 1) + " is not an option of the form -X (one"
                        + " letter) followed by its value");
            }
            Optional<String> refusal = refusal(type, flag);
            if (refusal.isPresent()) {
                throw new IllegalArgumentException("option " + flag + " is not allowed: it " + refusal.get());
            }
            Map<String, Grammar> allowed = type == FilesystemType.EXT4 ? EXT4 : XFS;
            Grammar grammar = allowed.get(flag);
            if (grammar == null) {
                throw new IllegalArgumentException("option " + flag + " is not one blocknode passes to "
                        + tool(type) + "; allowed: " + new java.util.TreeSet<>(allowed.keySet()));
            }
            if (!seen.add(flag)) {
                throw new IllegalArgumentException("option " + flag + " is given twice; give its sub-options"
                        + " once, comma-separated");
            }
            if (i + 1 >= words.length || words[i + 1].startsWith("-")) {
                throw new IllegalArgumentException("option " + flag + " needs a value: " + grammar.describe());
            }
            String value = words[i + 1];
            if (!VALUE.matcher(value).matches() || !grammar.accepts().test(value)) {
                throw new IllegalArgumentException("option " + flag + " of " + tool(type) + " has a value it does"
                        + " not take; it takes " + grammar.describe());
            }
            options.add(new Option(flag, value));
        }
        return new MkfsOptions(options);
    }

    public boolean isEmpty() {
        return options.isEmpty();
    }

    /** The value given for {@code flag}, if any. */
    public Optional<String> valueOf(String flag) {
        return options.stream().filter(o -> o.flag().equals(flag)).map(Option::value).findFirst();
    }

    /** The flags given, in order, without their values (a message names the options, never what they were set to). */
    public List<String> flags() {
        return options.stream().map(Option::flag).distinct().toList();
    }

    /** The options as argv words, leaving out {@code except} (a flag the caller merges into its own). */
    public List<String> argv(String except) {
        List<String> argv = new ArrayList<>();
        for (Option option : options) {
            if (!option.flag().equals(except)) {
                argv.add(option.flag());
                argv.add(option.value());
            }
        }
        return argv;
    }

    private static String tool(FilesystemType type) {
        return type == FilesystemType.EXT4 ? "mkfs.ext4" : "mkfs.xfs";
    }

    private static Optional<String> refusal(FilesystemType type, String flag) {
        return Optional.ofNullable((type == FilesystemType.EXT4 ? EXT4_REFUSED : XFS_REFUSED).get(flag));
    }

    private static final Map<String, String> EXT4_REFUSED = Map.of(
            "-F", "forces mke2fs past its checks; blocknode formats only a device it found blank",
            "-n", "is a dry run: no filesystem would be made, and the mount would fail",
            "-S", "writes only superblocks over whatever the device holds, a recovery step for an administrator",
            "-d", "copies a directory of the node into the filesystem",
            "-l", "reads a bad-blocks list from a file on the node",
            "-c", "runs badblocks over the device (a read-write test with -cc), which can take hours",
            "-z", "writes an undo file on the node",
            "-t", "changes the filesystem type; use fs_type",
            "-q", "is set by blocknode already",
            "-V", "prints the version and makes no filesystem");

    private static final Map<String, String> XFS_REFUSED = Map.of(
            "-f", "forces mkfs.xfs over an existing filesystem; blocknode formats only a device it found blank",
            "-N", "is a dry run: no filesystem would be made, and the mount would fail",
            "-p", "reads a prototype file from the node",
            "-r", "describes a realtime section, which lives on another device",
            "-c", "reads a configuration file from the node",
            "-K", "is set by blocknode already (no discard pass over a blank device)",
            "-q", "is set by blocknode already",
            "-V", "prints the version and makes no filesystem");

    // ---- the grammars ----------------------------------------------------------------------------------

    private static Grammar number(long min, long max) {
        return new Grammar(v -> inRange(v, min, max), "a whole number from " + min + " to " + max);
    }

    private static Grammar powerOfTwo(long min, long max) {
        return new Grammar(v -> inRange(v, min, max) && Long.bitCount(Long.parseLong(v)) == 1,
                "a power of two from " + min + " to " + max);
    }

    private static Grammar oneOf(String... values) {
        return new Grammar(v -> List.of(values).contains(v), String.join(", ", values));
    }

    private static boolean inRange(String value, long min, long max) {
        if (!value.matches("[0-9]{1,12}")) {
            return false;
        }
        long n = Long.parseLong(value);
        return n >= min && n <= max;
    }

    /** A size as mkfs.xfs reads it: bytes, or with a k, m or g suffix; within [min, max] bytes. */
    private static boolean xfsSize(String value, long min, long max) {
        java.util.regex.Matcher m = Pattern.compile("([0-9]{1,12})([kmg]?)").matcher(value);
        if (!m.matches()) {
            return false;
        }
        int shift = switch (m.group(2)) {
            case "k" -> 10;
            case "m" -> 20;
            case "g" -> 30;
            default -> 0;
        };
        long n = Long.parseLong(m.group(1));
        if (n > (Long.MAX_VALUE >> shift)) {
            return false;
        }
        long bytes = n << shift;
        return bytes >= min && bytes <= max;
    }

    /**
     * A comma-separated list of sub-options, each {@code name=value} (or a bare name where {@code bare} holds it),
     * checked against {@code values}; each name at most once.
     */
    private static Grammar subOptions(Map<String, Predicate<String>> values, Set<String> bare) {
        Set<String> names = new java.util.TreeSet<>(values.keySet());
        names.addAll(bare);
        return new Grammar(v -> {
            Set<String> seen = new HashSet<>();
            for (String sub : v.split(",", -1)) {
                int eq = sub.indexOf('=');
                String name = eq < 0 ? sub : sub.substring(0, eq);
                if (!seen.add(name)) {
                    return false;
                }
                if (eq < 0 ? !bare.contains(name)
                        : !values.containsKey(name) || !values.get(name).test(sub.substring(eq + 1))) {
                    return false;
                }
            }
            return true;
        }, "comma-separated sub-options among " + names + " (see the volume-context reference for their values)");
    }

    private static final Predicate<String> FLAG01 = v -> v.equals("0") || v.equals("1");

    /** mke2fs -O: features that only shape the new filesystem; ^name turns one off. Never journal_dev. */
    private static final Set<String> EXT4_FEATURES = Set.of("has_journal", "extent", "extents", "64bit",
            "dir_index", "dir_nlink", "extra_isize", "filetype", "flex_bg", "huge_file", "large_file", "large_dir",
            "metadata_csum", "metadata_csum_seed", "mmp", "project", "quota", "resize_inode", "sparse_super",
            "sparse_super2", "uninit_bg", "inline_data", "encrypt", "casefold", "ea_inode", "verity",
            "stable_inodes", "orphan_file", "fast_commit", "ext_attr");

    private static final Map<String, Grammar> EXT4 = Map.ofEntries(
            Map.entry("-b", powerOfTwo(1024, 65536)),
            Map.entry("-i", number(1024, 67108864)),
            Map.entry("-I", powerOfTwo(128, 65536)),
            Map.entry("-N", number(16, 4294967295L)),
            Map.entry("-m", number(0, 50)),
            Map.entry("-L", new Grammar(v -> v.matches("[A-Za-z0-9_.-]{1,16}"),
                    "a label of 1-16 letters, digits, _ . -")),
            Map.entry("-T", oneOf("default", "small", "floppy", "big", "huge", "news", "largefile", "largefile4")),
            Map.entry("-e", oneOf("continue", "remount-ro")), // never panic: one volume must not take the node down
            Map.entry("-O", new Grammar(v -> {
                for (String feature : v.split(",", -1)) {
                    if (!EXT4_FEATURES.contains(feature.startsWith("^") ? feature.substring(1) : feature)) {
                        return false;
                    }
                }
                return true;
            }, "comma-separated features (^ turns one off) among " + new java.util.TreeSet<>(EXT4_FEATURES))),
            Map.entry("-E", subOptions(Map.of(
                    "stride", v -> inRange(v, 1, 4294967295L),
                    "stripe_width", v -> inRange(v, 1, 4294967295L),
                    "stripe-width", v -> inRange(v, 1, 4294967295L),
                    "resize", v -> inRange(v, 1, 1L << 40),
                    "lazy_itable_init", FLAG01,
                    "lazy_journal_init", FLAG01,
                    "packed_meta_blocks", FLAG01,
                    "num_backup_sb", v -> v.equals("0") || v.equals("1") || v.equals("2"),
                    "root_owner", v -> v.matches("[0-9]{1,10}:[0-9]{1,10}"),
                    // Never discard: the probe sees a blank head, and a discard pass would unmap all the rest.
                    "encoding", v -> v.equals("utf8") || v.equals("utf8-12.1")), Set.of("nodiscard"))),
            Map.entry("-J", subOptions(Map.of("size", v -> inRange(v, 1, 10240)), Set.of())));

    private static final Map<String, Grammar> XFS = Map.of(
            "-b", subOptions(Map.of("size", v -> xfsSize(v, 512, 65536) && powerOfTwoSize(v)), Set.of()),
            "-s", subOptions(Map.of("size", v -> xfsSize(v, 512, 32768) && powerOfTwoSize(v)), Set.of()),
            "-m", subOptions(Map.of("crc", FLAG01, "finobt", FLAG01, "reflink", FLAG01, "rmapbt", FLAG01,
                    "bigtime", FLAG01, "inobtcount", FLAG01), Set.of()),
            "-i", subOptions(Map.of("size", v -> xfsSize(v, 256, 2048) && powerOfTwoSize(v),
                    "maxpct", v -> inRange(v, 0, 100), "align", FLAG01, "sparse", FLAG01, "projid32bit", FLAG01,
                    "nrext64", FLAG01), Set.of()),
            "-l", subOptions(Map.of("size", v -> xfsSize(v, 1, 1L << 31), "lazy-count", FLAG01,
                    "su", v -> xfsSize(v, 1, 256 << 10), "sunit", v -> inRange(v, 1, 1L << 31),
                    "version", v -> v.equals("2")), Set.of()),
            "-d", subOptions(Map.of("agcount", v -> inRange(v, 1, 1L << 32), "agsize", v -> xfsSize(v, 1, 1L << 40),
                    "su", v -> xfsSize(v, 1, 1L << 31), "sw", v -> inRange(v, 1, 1L << 31),
                    "sunit", v -> inRange(v, 1, 1L << 31), "swidth", v -> inRange(v, 1, 1L << 31)), Set.of()),
            "-L", new Grammar(v -> v.matches("[A-Za-z0-9_.-]{1,12}"), "a label of 1-12 letters, digits, _ . -"));

    private static boolean powerOfTwoSize(String value) {
        String digits = value.replaceAll("[kmg]$", "");
        return Long.bitCount(Long.parseLong(digits)) == 1;
    }
}
