package dev.blocknode.volume.filesystem;

import dev.blocknode.os.exec.Command;

import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The filesystems blocknode formats, mounts and grows, each with the commands that format it. Formatting
 * never forces: mkfs.xfs without -f refuses a device that holds a filesystem, a second guard behind
 * {@link DeviceProbe}. mke2fs has no such guard when its input is not a terminal (measured: it formats
 * over an xfs without -F), so for ext4 the probe is the only gate, and it runs right before. The one
 * forced format finishes an interrupted format of our own ({@link #formatOverInterruptedFormat}).
 */
public enum FilesystemType {

    EXT4("ext4") {
        @Override
        public Command format(Path device) {
            // nodiscard: a blank LUN needs no discard pass, and on a large thin LUN it can take minutes.
            return Command.of("mkfs.ext4", "-q", "-E", "nodiscard,lazy_itable_init=1,lazy_journal_init=1",
                    device.toString());
        }
    },
    XFS("xfs") {
        @Override
        public Command format(Path device) {
            return Command.of("mkfs.xfs", "-q", "-K", device.toString());
        }
    };

    private final String kernelName;

    FilesystemType(String kernelName) {
        this.kernelName = kernelName;
    }

    public String kernelName() {
        return kernelName;
    }

    public abstract Command format(Path device);

    /**
     * {@link #format} with the tool's force flag: only for finishing this plugin's own format of a device
     * that was blank, after that mkfs was cut short (see VolumeStager): what it left may look like a
     * filesystem to mkfs.xfs, and holds nothing anyone wrote.
     */
    public Command formatOverInterruptedFormat(Path device) {
        List<String> argv = new java.util.ArrayList<>(format(device).argv());
        argv.add(1, this == EXT4 ? "-F" : "-f");
        return Command.of(argv.toArray(String[]::new));
    }

    /**
     * The tools this filesystem needs on the host: its mkfs only. Growing is done by descriptor with the kernel's
     * ioctl (VolumeExpander), never by resize2fs or xfs_growfs, which look the mount up by name.
     */
    public List<String> tools() {
        return this == EXT4 ? List.of("mkfs.ext4") : List.of("mkfs.xfs");
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
