package dev.blocknode.testing;

import dev.blocknode.os.FileStat;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountOptions;
import dev.blocknode.os.mount.MountTable;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeLibrary;
import dev.blocknode.state.RecordStore;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a crash test works on, all under one temp dir: a filesystem volume and a block volume on real loop
 * devices, kubelet's paths for both, the data a pod writes, and the checks that the node converged.
 * close() removes whatever a failed test left (mounts, the plugin's read-only loop devices, the loops).
 */
public final class CrashScenario implements AutoCloseable {

    public static final String FS = "crash-fs";
    public static final String BLOCK = "crash-blk";
    public static final long FS_SIZE = 320L << 20; // mkfs.xfs wants 300 MiB at least
    public static final long FS_GROWN = 384L << 20;
    private static final long BLOCK_SIZE = 16L << 20;
    private static final long PATTERN_OFFSET = 1L << 20;

    private final Path dir;
    private final List<LoopDevice> loops = new ArrayList<>();
    private final byte[] data;
    private final byte[] pattern;
    private LoopDevice fs;
    private LoopDevice block;

    private CrashScenario(Path dir) {
        this.dir = dir;
        Random random = new Random(dir.toString().hashCode());
        this.data = new byte[1 << 20];
        random.nextBytes(data);
        this.pattern = new byte[4096];
        random.nextBytes(pattern);
    }

    public static CrashScenario create() throws IOException {
        NativeLibrary.load();
        CrashScenario scenario = new CrashScenario(Files.createTempDirectory(Path.of("/tmp"), "bn-crash-"));
        try {
            scenario.fs = scenario.loop("fs", FS_SIZE);
            scenario.block = scenario.loop("blk", BLOCK_SIZE);
            try (RandomAccessFile out = new RandomAccessFile(scenario.block.device().toFile(), "rw")) {
                out.seek(PATTERN_OFFSET);
                out.write(scenario.pattern);
                out.getFD().sync();
            }
            Files.createDirectories(scenario.fsStaging());
            Files.createDirectories(scenario.blockStaging());
            Files.createDirectories(scenario.fsTarget().getParent());
            Files.createDirectories(scenario.blockTarget().getParent());
        } catch (IOException | RuntimeException e) {
            scenario.close();
            throw e;
        }
        return scenario;
    }

    private LoopDevice loop(String name, long size) throws IOException {
        LoopDevice loop = LoopDevice.create(dir, name, size);
        loops.add(loop);
        return loop;
    }

    public Path dir() {
        return dir;
    }

    public Path fsDevice() {
        return fs.device();
    }

    public Path blockDevice() {
        return block.device();
    }

    private Path kubelet() {
        return dir.resolve("kubelet");
    }

    public Path fsStaging() {
        return kubelet().resolve("plugins/kubernetes.io/csi").resolve(PluginHarness.DRIVER).resolve(FS)
                .resolve("globalmount");
    }

    public Path fsTarget() {
        return kubelet().resolve("pods/pod-a/volumes/kubernetes.io~csi").resolve(FS).resolve("mount");
    }

    public Path blockStaging() {
        return kubelet().resolve("plugins/kubernetes.io/csi/volumeDevices/staging").resolve(BLOCK);
    }

    public Path blockTarget() {
        return kubelet().resolve("pods/pod-b/volumeDevices/kubernetes.io~csi").resolve(BLOCK);
    }

    private Path dataFile() {
        return fsTarget().resolve("data.bin");
    }

    /** The pod writes its data and syncs it (a crash of the plugin must not lose it). */
    public void writeData() throws IOException {
        try (RandomAccessFile out = new RandomAccessFile(dataFile().toFile(), "rw")) {
            out.write(data);
            out.getFD().sync();
        }
    }

    /** The storage grows the volume (the same size again on a retry). */
    public void growFsDevice() throws IOException {
        fs.grow(FS_GROWN);
    }

    /** Each path holds its volume exactly once, the data reads back, and the block view refuses writes. */
    public void assertPublished() throws IOException {
        for (Path path : List.of(fsStaging(), fsTarget(), blockTarget())) {
            assertEquals(1, mountsAt(path), "mounts at " + path);
        }
        assertArrayEquals(sha256(data), sha256(Files.readAllBytes(dataFile())), "the pod's data");
        FileStat view = Host.real().mounter().stat(blockTarget());
        assertTrue(view.isBlockDevice(), "the block target is a device node");
        assertArrayEquals(pattern, readPattern(blockTarget()), "the block volume's data through its read-only view");
        assertThrows(IOException.class, () -> {
            try (RandomAccessFile out = new RandomAccessFile(blockTarget().toFile(), "rw")) {
                out.write(new byte[512]);
                out.getFD().sync();
            }
        }, "writing through the read-only block view must fail");
    }

    /**
     * After the whole lifecycle: nothing of either volume is left on the node, and their data is intact
     * (the filesystem is mounted read-only here to read it back).
     */
    public void assertConverged() throws IOException {
        assertNothingLeft();
        assertFalse(Files.exists(fsTarget()), "the fs target is removed");
        assertFalse(Files.exists(blockTarget()), "the block target is removed");
        assertArrayEquals(pattern, readPattern(block.device()), "the block volume's data");
        Path check = Files.createDirectories(dir.resolve("check"));
        Host.real().mounter().mount(fs.device(), check, "xfs", MountOptions.NONE.withFlags(LinuxNative.MS_RDONLY));
        try {
            assertArrayEquals(sha256(data), sha256(Files.readAllBytes(check.resolve("data.bin"))), "the pod's data");
        } finally {
            Host.real().mounter().unmount(check);
        }
    }

    /** No mount, read-only view or staging record of either volume is left (their data is not looked at). */
    public void assertNothingLeft() throws IOException {
        assertEquals(List.of(), HostAssertions.mountsUnder(dir), "mounts left under " + dir);
        assertEquals(List.of(), loopsOverVolumes(), "loop devices left over the volumes' devices (NAME BACK-FILE)");
        assertEquals(List.of(), new RecordStore(dir.resolve("state")).all(), "staging records left");
    }

    private byte[] readPattern(Path device) throws IOException {
        byte[] back = new byte[pattern.length];
        try (RandomAccessFile in = new RandomAccessFile(device.toFile(), "r")) {
            in.seek(PATTERN_OFFSET);
            in.readFully(back);
        }
        return back;
    }

    private static long mountsAt(Path path) throws IOException {
        return MountTable.read(Path.of("/proc/self/mountinfo")).stream()
                .map(MountEntry::mountPoint).filter(path::equals).count();
    }

    /** Loop devices (the plugin's read-only views) whose backing is one of this scenario's loop devices. */
    private List<String> loopsOverVolumes() throws IOException {
        List<String> views = new ArrayList<>();
        for (LoopDevice loop : loops) {
            views.addAll(HostAssertions.loopDevicesBackedUnder(loop.device()));
        }
        return views;
    }

    private static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() throws IOException {
        HostCleanup.unmountAllUnder(dir, Host.real().mounter());
        for (String view : loopsOverVolumes()) {
            new ProcessCommandRunner().runChecked(Command.of("losetup", "--detach", view.split("\\s+")[0]));
        }
        HostCleanup.closeLoopsAndDelete(loops, dir);
    }
}
