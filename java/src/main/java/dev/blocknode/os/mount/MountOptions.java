package dev.blocknode.os.mount;

import dev.blocknode.os.natives.LinuxNative;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Mount options as a request gives them ("noatime", "nodev", "data=ordered") turned into what mount(2)
 * takes: flag bits plus a data string for the filesystem. Options that would change what kind of mount
 * this is (bind, move, remount, propagation) are refused: the plugin decides those, never the caller.
 */
public record MountOptions(long flags, List<String> data) {

    /** Bits that a bind mount can carry per mount point (given to it as it is made: {@link Mounter#bind}). */
    public static final long PER_MOUNT_POINT_FLAGS = LinuxNative.MS_RDONLY | LinuxNative.MS_NOSUID
            | LinuxNative.MS_NODEV | LinuxNative.MS_NOEXEC | LinuxNative.MS_NOATIME
            | LinuxNative.MS_NODIRATIME | LinuxNative.MS_RELATIME | LinuxNative.MS_STRICTATIME;

    public static final MountOptions NONE = new MountOptions(0, List.of());

    private record Flag(long bit, boolean set) {
    }

    private static final Map<String, Flag> FLAGS = Map.ofEntries(
            Map.entry("ro", new Flag(LinuxNative.MS_RDONLY, true)),
            Map.entry("rw", new Flag(LinuxNative.MS_RDONLY, false)),
            Map.entry("nosuid", new Flag(LinuxNative.MS_NOSUID, true)),
            Map.entry("suid", new Flag(LinuxNative.MS_NOSUID, false)),
            Map.entry("nodev", new Flag(LinuxNative.MS_NODEV, true)),
            Map.entry("dev", new Flag(LinuxNative.MS_NODEV, false)),
            Map.entry("noexec", new Flag(LinuxNative.MS_NOEXEC, true)),
            Map.entry("exec", new Flag(LinuxNative.MS_NOEXEC, false)),
            Map.entry("sync", new Flag(LinuxNative.MS_SYNCHRONOUS, true)),
            Map.entry("async", new Flag(LinuxNative.MS_SYNCHRONOUS, false)),
            Map.entry("dirsync", new Flag(LinuxNative.MS_DIRSYNC, true)),
            Map.entry("noatime", new Flag(LinuxNative.MS_NOATIME, true)),
            Map.entry("atime", new Flag(LinuxNative.MS_NOATIME, false)),
            Map.entry("nodiratime", new Flag(LinuxNative.MS_NODIRATIME, true)),
            Map.entry("diratime", new Flag(LinuxNative.MS_NODIRATIME, false)),
            Map.entry("relatime", new Flag(LinuxNative.MS_RELATIME, true)),
            Map.entry("norelatime", new Flag(LinuxNative.MS_RELATIME, false)),
            Map.entry("strictatime", new Flag(LinuxNative.MS_STRICTATIME, true)),
            Map.entry("lazytime", new Flag(LinuxNative.MS_LAZYTIME, true)),
            Map.entry("nolazytime", new Flag(LinuxNative.MS_LAZYTIME, false)),
            Map.entry("silent", new Flag(LinuxNative.MS_SILENT, true)),
            Map.entry("loud", new Flag(LinuxNative.MS_SILENT, false)));

    /** fstab-only words: meaningful to mount(8) and fstab, not to the kernel, so harmless to drop. */
    private static final List<String> FSTAB_ONLY = List.of("defaults", "auto", "noauto", "nofail", "_netdev");

    private static final List<String> REFUSED = List.of("bind", "rbind", "move", "remount", "shared", "rshared",
            "private", "rprivate", "slave", "rslave", "unbindable", "runbindable", "loop", "user", "users",
            "owner", "group", "x-mount.mkdir");

    /** At most this many entries in a mount_flags list. */
    public static final int MAX_ENTRIES = 64;
    /** At most this many characters in all of them: mount(2) takes at most a page of option data. */
    public static final int MAX_TOTAL_LENGTH = 4096;

    /**
     * What one option may look like: a name, and a value after '=', plain or in double quotes (an SELinux
     * context, whose categories may hold commas: "context=\"system_u:object_r:container_file_t:s0:c1,c2\"").
     * Anything else (';', a stray quote, '\\', '$') is no option of ext4, xfs or the VFS, and is refused
     * here, before the stager formats a blank device, rather than by mount(2) after it.
     */
    private static final Pattern OPTION = Pattern.compile(
            "[A-Za-z0-9_][A-Za-z0-9_.-]*(=(\"[A-Za-z0-9_.:/+@=%~,-]*\"|[A-Za-z0-9_.:/+@=%~-]*))?");

    public MountOptions {
        data = List.copyOf(data);
    }

    /**
     * Parses options as they come in a CSI MountVolume.mount_flags list; an entry may itself hold several
     * comma-separated options.
     *
     * @throws IllegalArgumentException naming the option that cannot be honoured
     */
    public static MountOptions parse(Collection<String> options) {
        checkSize(options);
        long flags = 0;
        List<String> data = new ArrayList<>();
        for (String entry : options) {
            for (String option : splitOutsideQuotes(entry)) {
                String word = option.strip();
                if (word.isEmpty() || FSTAB_ONLY.contains(word)) {
                    continue;
                }
                if (!word.chars().allMatch(c -> c > ' ' && c < 0x7f)) {
                    throw new IllegalArgumentException("mount option " + quote(word)
                            + " holds a control character, a space or a non-ASCII character");
                }
                if (!OPTION.matcher(word).matches()) {
                    throw new IllegalArgumentException("mount option " + quote(word) + " is not of the form name"
                            + " or name=value (letters, digits and _ . -; in a value also : / + @ = % ~)");
                }
                if (REFUSED.contains(word) || word.startsWith("x-")) {
                    throw new IllegalArgumentException("mount option " + quote(word)
                            + " is not allowed: the plugin decides the kind of mount");
                }
                Flag flag = FLAGS.get(word);
                if (flag == null) {
                    data.add(word);
                } else if (flag.set()) {
                    flags |= flag.bit();
                } else {
                    flags &= ~flag.bit();
                }
            }
        }
        return new MountOptions(flags, data);
    }

    /** An entry's comma-separated options; a comma inside double quotes belongs to its option's value. */
    private static List<String> splitOutsideQuotes(String entry) {
        List<String> options = new ArrayList<>();
        boolean quoted = false;
        int start = 0;
        for (int i = 0; i < entry.length(); i++) {
            char c = entry.charAt(i);
            if (c == '"') {
                quoted = !quoted;
            } else if (c == ',' && !quoted) {
                options.add(entry.substring(start, i));
                start = i + 1;
            }
        }
        options.add(entry.substring(start));
        return options;
    }

    private static void checkSize(Collection<String> options) {
        if (options.size() > MAX_ENTRIES) {
            throw new IllegalArgumentException(options.size() + " entries; at most " + MAX_ENTRIES);
        }
        long length = options.stream().mapToLong(String::length).sum();
        if (length > MAX_TOTAL_LENGTH) {
            throw new IllegalArgumentException(length + " characters in all; at most " + MAX_TOTAL_LENGTH);
        }
    }

    public boolean readOnly() {
        return (flags & LinuxNative.MS_RDONLY) != 0;
    }

    /** The same options, read-only. */
    public MountOptions withReadOnly() {
        return withFlags(LinuxNative.MS_RDONLY);
    }

    public MountOptions withFlags(long extra) {
        return new MountOptions(flags | extra, data);
    }

    /** Only the part a bind mount can carry. */
    public MountOptions perMountPoint() {
        return new MountOptions(flags & PER_MOUNT_POINT_FLAGS, List.of());
    }

    /** The comma-joined data string for mount(2), or null when there is none. */
    public String dataString() {
        return data.isEmpty() ? null : String.join(",", data);
    }

    private static String quote(String word) {
        String shown = word.length() > 64 ? word.substring(0, 64) + "..." : word;
        return '"' + shown.replaceAll("[^\\x20-\\x7e]", "?") + '"';
    }
}
