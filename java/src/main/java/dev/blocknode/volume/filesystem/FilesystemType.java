package dev.blocknode.volume.filesystem;

import dev.blocknode.os.exec.Command;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The filesystems blocknode formats, mounts and grows, each with the commands that format it. Formatting
 * never forces: mkfs.xfs without -f refuses a device that holds a filesystem, a second guard behind
 * {@link DeviceProbe}. mke2fs has no such guard when its input is not a terminal (measured: it formats
 * over an xfs without -F), so for ext4 the probe is the only gate, and it runs right before. Nor is the force flag
 * needed to finish an interrupted format of our own: the plugin blanks the device's head first, and formats it as
 * any blank device. (mke2fs -F would also push past its own refusals, a block size too big for the system among
 * them, and write a filesystem the kernel cannot mount.)
 */
public enum FilesystemType {

    EXT4("ext4") {
        @Override
        public Command format(Path device, MkfsOptions options) {
            // nodiscard: a blank LUN needs no discard pass, and on a large thin LUN it can take minutes. mke2fs
            // reads only its last -E, so a volume's own extended options are appended to these (the later wins).
            String extended = "nodiscard,lazy_itable_init=1,lazy_journal_init=1"
                    + options.valueOf("-E").map(e -> "," + e).orElse("");
            List<String> argv = new ArrayList<>(List.of("mkfs.ext4", "-q", "-E", extended));
            argv.addAll(options.argv("-E"));
            argv.add(device.toString());
            return Command.of(argv.toArray(String[]::new));
        }
    },
    XFS("xfs") {
        @Override
        public Command format(Path device, MkfsOptions options) {
            List<String> argv = new ArrayList<>(List.of("mkfs.xfs", "-q", "-K"));
            argv.addAll(options.argv(""));
            argv.add(device.toString());
            return Command.of(argv.toArray(String[]::new));
        }
    };

    private final String kernelName;

    FilesystemType(String kernelName) {
        this.kernelName = kernelName;
    }

    public String kernelName() {
        return kernelName;
    }

    /**
     * The format of a blank device with a volume's own options (checked: {@link MkfsOptions#parse}), placed before
     * the device, which is always the last word.
     */
    public abstract Command format(Path device, MkfsOptions options);

    public Command format(Path device) {
        return format(device, MkfsOptions.NONE);
    }

    /**
     * {@link #format} as a dry run, which writes nothing (mke2fs -n, mkfs.xfs -N): the tool checks the volume's own
     * options against itself and the device, and refuses what it would refuse, before a byte of the device changes.
     * Without the force flag, so mke2fs's own refusals (a block size too big for the system) stay refusals.
     */
    public Command dryRun(Path device, MkfsOptions options) {
        List<String> argv = new ArrayList<>(format(device, options).argv());
        argv.add(1, this == EXT4 ? "-n" : "-N");
        return Command.of(argv.toArray(String[]::new));
    }

    /**
     * The tools this filesystem needs on the host: its mkfs, and for ext4 the e2fsck that preens it before a mount. Growing is done by descriptor with the kernel's
     * ioctl (VolumeExpander), never by resize2fs or xfs_growfs, which look the mount up by name.
     */
    public List<String> tools() {
        return this == EXT4 ? List.of("mkfs.ext4", "e2fsck") : List.of("mkfs.xfs");
    }

    public static Optional<FilesystemType> byName(String name) {
        String wanted = name.toLowerCase(Locale.ROOT);
        for (FilesystemType type : values()) {
            if (type.kernelName.equals(wanted)) {
                return Optional.of(type);
            }
        }
        return Optional.empty();
    }
}
