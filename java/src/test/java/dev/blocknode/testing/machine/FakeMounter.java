package dev.blocknode.testing.machine;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.FileStat;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.os.mount.Mounter;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * The fake machine's {@link Mounter}: mounts change its table and are logged; paths may be the tree's own
 * or the /proc/self/fd paths of its descriptors. Mounting onto a descriptor mounts where it was opened. A
 * bind has its flags from the start, as the real one does: logged "bind A -> B (ro,0x3)", "bind A -> B" without.
 */
final class FakeMounter implements Mounter {

    private final FakeMachine machine;

    FakeMounter(FakeMachine machine) {
        this.machine = machine;
    }

    @Override
    public void mount(Path device, Path target, String fsType, MountOptions options) throws IOException {
        synchronized (machine) {
            Path at = directoryTarget(target);
            machine.injected("mount", at);
            DeviceNumber number = machine.deviceNode(device).orElseThrow(() -> Errno.noEntry("mount", device));
            FakeMount made = machine.mount(at, machine.filesystem(number), device.toString(), fsType, number, "/");
            if (options.dataString() != null) {
                // The filesystem's own options, as /proc/self/mountinfo's super options would show them.
                made.flags = (options.readOnly() ? "ro," : "rw,") + options.dataString();
            }
            machine.record("mount " + device + " -> " + at + " (" + fsType + ")");
        }
    }

    @Override
    public void bind(Path source, Path target, MountOptions options) throws IOException {
        long flags = options.perMountPoint().flags();
        String shownFlags = flags == 0 ? "rw" : (options.readOnly() ? "ro" : "rw") + ",0x" + Long.toHexString(flags);
        String logged = flags == 0 ? "" : " (" + shownFlags + ")";
        synchronized (machine) {
            Path at = machine.treePath(target);
            FakeNode onto = existing(at, "mount");
            machine.injected("bind", at);
            Optional<FakeOpenedPath> opened = machine.descriptorOf(source);
            if (opened.isPresent()) {
                FakeNode shown = opened.get().node();
                if (shown.isDirectory() != onto.isDirectory()) {
                    throw Errno.notDirectory("mount", at);
                }
                FakeMount from = machine.top(opened.get().shown()).orElse(null);
                machine.mount(at, shown, from == null ? "none" : from.source, from == null ? "none" : from.fsType,
                        shown.device, "/").flags = shownFlags;
                machine.record("bind " + opened.get().shown() + " -> " + at + logged);
                return;
            }
            DeviceNumber number = machine.deviceNode(source).orElseThrow(() -> Errno.noEntry("mount", source));
            if (onto.isDirectory()) {
                throw Errno.notDirectory("mount", at);
            }
            FakeNode node = new FakeNode(FakeNode.Kind.BLOCK_DEVICE, FakeMachine.DEVTMPFS, number);
            machine.mount(at, node, "devtmpfs", "devtmpfs", FakeMachine.DEVTMPFS, "/" + source.getFileName())
                    .flags = shownFlags;
            machine.record("bind " + source + " -> " + at + logged);
        }
    }

    @Override
    public boolean unmount(Path target) throws IOException {
        synchronized (machine) {
            Path at = machine.treePath(target);
            machine.injected("unmount", at);
            if (!machine.unmount(at)) {
                return false;
            }
            machine.record("unmount " + at);
            return true;
        }
    }

    @Override
    public boolean isMountPoint(Path path) throws IOException {
        return machine.isMounted(machine.treePath(path));
    }

    @Override
    public boolean isPresentMountPoint(Path path) throws IOException {
        Path at = machine.treePath(path);
        return machine.exists(at) && machine.isMounted(at);
    }

    @Override
    public FileStat stat(Path path) throws IOException {
        synchronized (machine) {
            Path at = machine.treePath(path);
            Optional<DeviceNumber> device = machine.deviceNode(at);
            if (device.isPresent()) {
                return machine.stat(at, new FakeNode(FakeNode.Kind.BLOCK_DEVICE, FakeMachine.DEVTMPFS, device.get()));
            }
            return machine.stat(at, existing(at, "statx"));
        }
    }

    @Override
    public List<MountEntry> mountsWhere(Predicate<MountEntry> wanted) {
        return machine.table().stream().map(m -> new MountEntry(m.id, 1, m.device, m.rootInFilesystem, m.at,
                m.flags, m.fsType, m.source, "rw")).filter(wanted).toList();
    }

    private Path directoryTarget(Path target) throws IOException {
        Path at = machine.treePath(target);
        if (!existing(at, "mount").isDirectory()) {
            throw Errno.notDirectory("mount", at);
        }
        return at;
    }

    private FakeNode existing(Path at, String call) throws IOException {
        FakeNode node = machine.visible(at);
        if (node == null) {
            throw Errno.noEntry(call, at);
        }
        return node;
    }
}
