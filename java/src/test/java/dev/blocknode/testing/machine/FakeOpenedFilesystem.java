package dev.blocknode.testing.machine;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.fd.OpenedFilesystem;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A directory of the fake machine opened for reading: it holds the node it was reopened from, as the kernel's
 * "." does, and its grow calls change and log the size of the filesystem that node is on (never one found by
 * name): "grow xfs DEV at PATH to N blocks (imaxpct P)", "resize ext4 DEV at PATH to N blocks".
 */
final class FakeOpenedFilesystem implements OpenedFilesystem {

    private final FakeMachine machine;
    private final FakeOpenedPath descriptor;

    FakeOpenedFilesystem(FakeMachine machine, FakeOpenedPath descriptor) {
        this.machine = machine;
        this.descriptor = descriptor;
    }

    private DeviceNumber device() {
        return descriptor.node().device;
    }

    @Override
    public Path shown() {
        return descriptor.shown();
    }

    @Override
    public FileStat stat() {
        return descriptor.stat();
    }

    @Override
    public long blockSize() {
        return machine.filesystemSize(device())[0];
    }

    /** The fake filesystem's block count; {@code deviceNode} must be a node of the device it is on. */
    @Override
    public long ext4BlockCount(Path deviceNode) throws IOException {
        if (!machine.deviceNode(deviceNode).map(device()::equals).orElse(false)) {
            throw new IOException(deviceNode + " is not the node of device " + device());
        }
        return machine.filesystemSize(device())[1];
    }

    @Override
    public XfsGeometry xfsGeometry() {
        long[] size = machine.filesystemSize(device());
        return new XfsGeometry(size[0], size[1], 25);
    }

    @Override
    public void xfsGrowData(long newBlocks, int imaxpct) throws IOException {
        grow("grow xfs", newBlocks, " (imaxpct " + imaxpct + ")");
    }

    @Override
    public void ext4Resize(long newBlocks) throws IOException {
        grow("resize ext4", newBlocks, "");
    }

    private void grow(String what, long newBlocks, String detail) throws IOException {
        synchronized (machine) {
            machine.injected("grow", shown());
            long[] size = machine.filesystemSize(device());
            if (newBlocks < size[1]) {
                throw Errno.invalid("ioctl", shown()); // both kernels refuse to shrink here
            }
            machine.filesystemSize(device(), size[0], newBlocks);
            machine.record(what + " " + device() + " at " + shown() + " to " + newBlocks + " blocks" + detail);
        }
    }

    @Override
    public void close() {
        descriptor.close();
    }
}
