package dev.blocknode.volume.filesystem;

import dev.blocknode.logging.Printable;

import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * The filesystem options (mount(2)'s data string: what {@code MountOptions} does not turn into flag bits) that
 * blocknode passes to ext4 and xfs, each with the grammar of its value, so that an option the kernel would
 * refuse with EINVAL is refused here, before a blank device is formatted. The lists follow the kernel's own
 * documentation (Documentation/admin-guide/ext4.rst and xfs.rst) and the kernels' parsers; options that make
 * no sense for a CSI volume, or that a caller could use against the node, are refused with the reason.
 * The generic options every filesystem takes from the LSM (SELinux's {@code context=} family, which kubelet
 * passes since Kubernetes 1.36) are accepted for both.
 *
 * <p>Messages name the option's name, which the caller's grammar already limited to letters, digits and
 * {@code _ . -}, and never its value.
 */
public final class FilesystemOptions {

    /** What a value must be; {@link #describe} is said to the caller when it is not. */
    private record Value(Predicate<String> accepts, String describe) {
    }

    private static final Value NONE = null;

    private static Value oneOf(String... values) {
        Set<String> allowed = Set.of(values);
        return new Value(allowed::contains, "one of " + String.join(", ", values));
    }

    private static Value number(long min, long max) {
        return new Value(v -> inRange(v, min, max), "a decimal number from " + min + " to " + max);
    }

    private static Value powerOfTwo(long min, long max) {
        return new Value(v -> inRange(v, min, max) && Long.bitCount(Long.parseLong(v)) <= 1,
                "0 or a power of two up to " + max);
    }

    private static boolean inRange(String value, long min, long max) {
        if (!value.matches("[0-9]{1,19}")) {
            return false;
        }
        BigInteger n = new BigInteger(value);
        return n.compareTo(BigInteger.valueOf(min)) >= 0 && n.compareTo(BigInteger.valueOf(max)) <= 0;
    }

    /** A size with xfs's suffixes (k, m, g: powers of 1024), as xfs's suffix_kstrtoint reads it. */
    private static long xfsSize(String value) {
        var m = Pattern.compile("([0-9]{1,12})([kKmMgG]?)").matcher(value);
        if (!m.matches()) {
            return -1;
        }
        long n = Long.parseLong(m.group(1));
        return switch (m.group(2).toLowerCase(java.util.Locale.ROOT)) {
            case "k" -> n << 10;
            case "m" -> n << 20;
            case "g" -> n << 30;
            default -> n;
        };
    }

    private static final Value SECURITY_CONTEXT = new Value(v -> SecurityContext.parse(v).isPresent(),
            "an SELinux context user:role:type[:level] of at most " + SecurityContext.MAX_LENGTH
                    + " characters, in double quotes when it holds a comma");

    /** Options the LSM takes for any filesystem (security/selinux: context mounts). */
    private static final Map<String, Value> GENERIC = Map.of(
            "context", SECURITY_CONTEXT,
            "fscontext", SECURITY_CONTEXT,
            "defcontext", SECURITY_CONTEXT,
            "rootcontext", SECURITY_CONTEXT);

    private static final long INT_MAX = Integer.MAX_VALUE;
    private static final long UINT_MAX_ID = 4294967294L; // (uid_t) -1 is no id

    private static final Map<String, Value> EXT4_FLAGS = flags(
            "journal_checksum", "nojournal_checksum", "journal_async_commit", "orlov", "user_xattr", "acl", "noacl",
            "bsddf", "minixdf", "grpid", "bsdgroups", "nogrpid", "sysvgroups", "quota", "noquota", "usrquota",
            "grpquota", "prjquota", "barrier", "nobarrier", "delalloc", "nodelalloc", "auto_da_alloc",
            "noauto_da_alloc", "init_itable", "noinit_itable", "discard", "nodiscard", "nouid32", "block_validity",
            "noblock_validity", "dioread_lock", "dioread_nolock", "dax", "i_version", "inlinecrypt",
            "prefetch_block_bitmaps", "no_prefetch_block_bitmaps", "nombcache", "no_mbcache", "warn_on_error",
            "nowarn_on_error");

    private static final Map<String, Value> EXT4_VALUES = Map.ofEntries(
            Map.entry("data", oneOf("journal", "ordered", "writeback")),
            Map.entry("data_err", oneOf("abort", "ignore")),
            Map.entry("errors", oneOf("continue", "remount-ro")),
            Map.entry("commit", number(0, INT_MAX / 1000)), // seconds; the kernel refuses over INT_MAX / HZ
            Map.entry("barrier", oneOf("0", "1")),
            Map.entry("auto_da_alloc", oneOf("0", "1")),
            Map.entry("mb_optimize_scan", oneOf("0", "1")),
            Map.entry("dax", oneOf("always", "never", "inode")),
            Map.entry("jqfmt", oneOf("vfsold", "vfsv0", "vfsv1")),
            Map.entry("resuid", number(0, UINT_MAX_ID)),
            Map.entry("resgid", number(0, UINT_MAX_ID)),
            Map.entry("stripe", number(0, INT_MAX)),
            Map.entry("inode_readahead_blks", powerOfTwo(0, 1L << 30)),
            Map.entry("max_batch_time", number(0, INT_MAX)),
            Map.entry("min_batch_time", number(0, INT_MAX)),
            Map.entry("journal_ioprio", number(0, 7)),
            Map.entry("init_itable", number(0, INT_MAX)),
            Map.entry("max_dir_size_kb", number(0, INT_MAX)));

    private static final Map<String, String> EXT4_REFUSED = Map.ofEntries(
            Map.entry("journal_dev", "names a journal device outside the volume"),
            Map.entry("journal_path", "names a journal device outside the volume"),
            Map.entry("usrjquota", "names a quota file, a path the node does not take from a caller"),
            Map.entry("grpjquota", "names a quota file, a path the node does not take from a caller"),
            Map.entry("sb", "mounts from a backup superblock, a recovery step for an administrator"),
            Map.entry("abort", "is a debugging option that aborts the journal"),
            Map.entry("debug", "is a debugging option"),
            Map.entry("test_dummy_encryption", "is a testing option"));

    /** errors=panic is refused by name, with its reason: one corrupted volume would take the whole node down. */
    private static final String EXT4_ERRORS_PANIC = "errors=panic would let one volume's corruption panic the node";

    private static final Map<String, Value> XFS_FLAGS = flags(
            "discard", "nodiscard", "grpid", "bsdgroups", "nogrpid", "sysvgroups", "filestreams", "inode32",
            "inode64", "largeio", "nolargeio", "noalign", "nouuid", "noquota", "quota", "usrquota", "uquota",
            "uqnoenforce", "qnoenforce", "gquota", "grpquota", "gqnoenforce", "pquota", "prjquota", "pqnoenforce",
            "swalloc", "wsync", "dax");

    private static final Set<Long> XFS_LOG_BUFFER_SIZES = Set.of(16L << 10, 32L << 10, 64L << 10, 128L << 10,
            256L << 10);

    private static final Map<String, Value> XFS_VALUES = Map.of(
            "logbufs", oneOf("0", "2", "3", "4", "5", "6", "7", "8"), // 0: the default
            "logbsize", new Value(v -> xfsSize(v) == 0 || XFS_LOG_BUFFER_SIZES.contains(xfsSize(v)),
                    "16k, 32k, 64k, 128k or 256k (or the same in bytes; 0 for the default)"),
            "allocsize", new Value(v -> {
                long size = xfsSize(v);
                return size >= 4096 && size <= (1L << 30) && Long.bitCount(size) == 1;
            }, "a power of two from 4k to 1g"),
            "sunit", number(0, INT_MAX),
            "swidth", number(0, INT_MAX),
            "dax", oneOf("always", "never", "inode"));

    private static final Map<String, String> XFS_REFUSED = Map.of(
            "logdev", "names a log device outside the volume",
            "rtdev", "names a realtime device outside the volume",
            "barrier", "was removed from xfs (Linux 4.19); the kernel refuses it",
            "nobarrier", "was removed from xfs (Linux 4.19); the kernel refuses it");

    /**
     * Skip the journal's (log's) replay: a filesystem mounted so may be inconsistent, so only read-only, as a
     * snapshot on read-only media needs them (xfs refuses norecovery without ro itself; ext4 would not).
     */
    private static final Set<String> READ_ONLY_ONLY = Set.of("norecovery", "noload");

    private FilesystemOptions() {
    }

    private static Map<String, Value> flags(String... names) {
        Map<String, Value> flags = new java.util.HashMap<>();
        for (String name : names) {
            flags.put(name, NONE);
        }
        return java.util.Collections.unmodifiableMap(flags);
    }

    /**
     * Checks every option of {@code data} (as {@code MountOptions} left them: name or name=value) against
     * {@code type}; {@code readOnly} when the mount is read-only (the flags hold ro).
     *
     * @throws IllegalArgumentException naming the first option {@code type} would not take, and why
     */
    public static void check(FilesystemType type, List<String> data, boolean readOnly) {
        SecurityContext.checkOptions(data);
        for (String option : data) {
            if (READ_ONLY_ONLY.contains(option) && (type == FilesystemType.EXT4 || option.equals("norecovery"))) {
                if (!readOnly) {
                    throw new IllegalArgumentException("mount option " + option + " is allowed only with ro: it skips"
                            + " the journal's replay, and a filesystem mounted so may be inconsistent");
                }
                continue;
            }
            problem(type, option).ifPresent(reason -> {
                throw new IllegalArgumentException(reason);
            });
        }
        if (type == FilesystemType.XFS) {
            boolean sunit = data.stream().anyMatch(o -> o.startsWith("sunit="));
            boolean swidth = data.stream().anyMatch(o -> o.startsWith("swidth="));
            if (sunit != swidth) {
                throw new IllegalArgumentException("mount options sunit= and swidth= of xfs go together");
            }
            if (sunit) {
                long unit = lastValue(data, "sunit=");
                long width = lastValue(data, "swidth=");
                if ((unit == 0) != (width == 0) || (unit != 0 && width % unit != 0)) {
                    throw new IllegalArgumentException("mount option swidth= of xfs must be a multiple of sunit="
                            + " (both 0, or neither)");
                }
            }
        }
    }

    /** The value of the last option named so (the kernel takes the last), already checked to be a number. */
    private static long lastValue(List<String> data, String prefix) {
        long value = 0;
        for (String option : data) {
            if (option.startsWith(prefix)) {
                value = Long.parseLong(option.substring(prefix.length()));
            }
        }
        return value;
    }

    /**
     * The options of a request that names no filesystem must all suit one of them: the one the node formats a
     * blank device with, or the one it finds, is checked again once known ({@link #check}).
     *
     * @throws IllegalArgumentException saying why neither filesystem would take them
     */
    public static void checkForEither(List<String> data, boolean readOnly) {
        StringBuilder reasons = new StringBuilder();
        for (FilesystemType type : FilesystemType.values()) {
            try {
                check(type, data, readOnly);
                return;
            } catch (IllegalArgumentException e) {
                reasons.append(reasons.isEmpty() ? "" : "; ").append(e.getMessage());
            }
        }
        throw new IllegalArgumentException("no fs_type is named and the options suit no filesystem blocknode"
                + " mounts: " + reasons);
    }

    /** Why {@code type} would not take {@code option}; empty when it would. */
    static Optional<String> problem(FilesystemType type, String option) {
        int eq = option.indexOf('=');
        String name = eq < 0 ? option : option.substring(0, eq);
        Optional<String> value = eq < 0 ? Optional.empty() : Optional.of(option.substring(eq + 1));
        String shown = "mount option " + Printable.bounded(name, 64) + (value.isPresent() ? "=" : "");
        String fs = type.kernelName();
        Map<String, Value> flags = type == FilesystemType.EXT4 ? EXT4_FLAGS : XFS_FLAGS;
        Map<String, Value> values = type == FilesystemType.EXT4 ? EXT4_VALUES : XFS_VALUES;
        Map<String, String> refused = type == FilesystemType.EXT4 ? EXT4_REFUSED : XFS_REFUSED;
        if (refused.containsKey(name)) {
            return Optional.of(shown + " is not allowed: it " + refused.get(name));
        }
        if (value.isEmpty()) {
            if (flags.containsKey(name)) {
                return Optional.empty();
            }
            if (values.containsKey(name) || GENERIC.containsKey(name)) {
                return Optional.of(shown + " of " + fs + " needs a value: " + describe(name, values));
            }
            return Optional.of(shown + " is not an option of " + fs);
        }
        Value grammar = values.containsKey(name) ? values.get(name) : GENERIC.get(name);
        if (grammar == null) {
            return Optional.of(flags.containsKey(name) ? shown + " of " + fs + " takes no value"
                    : shown + " is not an option of " + fs);
        }
        if (type == FilesystemType.EXT4 && name.equals("errors") && value.get().equals("panic")) {
            return Optional.of("mount option errors= is not allowed: " + EXT4_ERRORS_PANIC);
        }
        if (!grammar.accepts().test(value.get())) {
            return Optional.of(shown + " of " + fs + " has a value it does not take; it takes "
                    + grammar.describe());
        }
        return Optional.empty();
    }

    private static String describe(String name, Map<String, Value> values) {
        Value grammar = values.containsKey(name) ? values.get(name) : GENERIC.get(name);
        return grammar.describe();
    }
}
