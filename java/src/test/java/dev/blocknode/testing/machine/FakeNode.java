package dev.blocknode.testing.machine;

import dev.blocknode.os.DeviceNumber;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/** One inode of the in-memory tree: a directory (with entries), a file, a symlink or a block device node. */
final class FakeNode {

    enum Kind { DIRECTORY, FILE, SYMLINK, BLOCK_DEVICE }

    private static final AtomicLong INODES = new AtomicLong(1000);

    final Kind kind;
    /** The filesystem the node lives on (st_dev). */
    final DeviceNumber device;
    /** The device a block device node is (st_rdev). */
    final DeviceNumber rdev;
    final long inode = INODES.incrementAndGet();
    final Map<String, FakeNode> entries = new TreeMap<>();

    FakeNode(Kind kind, DeviceNumber device, DeviceNumber rdev) {
        this.kind = kind;
        this.device = device;
        this.rdev = rdev;
    }

    boolean isDirectory() {
        return kind == Kind.DIRECTORY;
    }

    int mode() {
        return switch (kind) {
            case DIRECTORY -> 040750;
            case FILE -> 0100640;
            case SYMLINK -> 0120777;
            case BLOCK_DEVICE -> 060660;
        };
    }
}
