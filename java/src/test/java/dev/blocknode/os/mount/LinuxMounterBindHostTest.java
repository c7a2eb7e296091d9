package dev.blocknode.os.mount;

import dev.blocknode.os.HostPaths;
import dev.blocknode.os.natives.LinuxNative;
import dev.blocknode.os.natives.NativeIOException;
import dev.blocknode.testing.HostAssertions;
import dev.blocknode.testing.LoopDevice;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link LinuxMounter#bind} with flags, both ways it can be made: by the new mount API, and, where the kernel
 * answers ENOSYS (played here by a stand-in for the native call), prepared in a private scratch tmpfs and moved
 * into place. The target lies in a shared tmpfs with a peer, which stands for the host's mount namespace
 * receiving what the plugin mounts under the kubelet root: the peer's copy must have the flags.
 */
@Tag("host")
class LinuxMounterBindHostTest {

    enum Way {
        MOUNT_API, MOVED
    }

    private static final NativeIOException NO_MOUNT_API =
            new NativeIOException("open_tree", "a -> b", 38, "ENOSYS", "Function not implemented");

    @TempDir
    Path dir;

    private Path shared;
    private Path peer;
    private Path scratch;
    private final List<Path> fixtureMounts = new ArrayList<>();
    private final List<LoopDevice> loops = new ArrayList<>();

    @BeforeEach
    void sharedTmpfsWithAPeer() throws IOException {
        shared = Files.createDirectories(dir.resolve("shared"));
        peer = Files.createDirectories(dir.resolve("peer"));
        scratch = dir.resolve("run/binds");
        mountForTheTest("tmpfs", shared, "tmpfs", 0, "size=1m");
        LinuxNative.mount(null, shared.toString(), null, LinuxNative.MS_SHARED, null);
        mountForTheTest(shared.toString(), peer, null, LinuxNative.MS_BIND, null);
    }

    /**
     * The binds made (an unmount in the shared tmpfs takes the peer's copy with it), the scratch, the fixture;
     * every step is tried even when one fails, so that a failed test leaves nothing either.
     */
    @AfterEach
    void unmountEverything() throws IOException {
        List<Throwable> failures = new ArrayList<>();
        List<Path> made = HostAssertions.mountsUnder(dir).stream().filter(m -> !fixtureMounts.contains(m))
                .sorted(Comparator.comparingInt(Path::getNameCount).reversed()).toList();
        for (Path mount : made) { // the scratch too, after what is mounted in it
            attempt(failures, () -> {
                while (Files.exists(mount) && LinuxNative.isMountPoint(mount.toString())) {
                    LinuxNative.umount2(mount.toString(), 0);
                }
            });
        }
        for (Path mount : fixtureMounts.reversed()) {
            attempt(failures, () -> LinuxNative.umount2(mount.toString(), 0));
        }
        for (LoopDevice loop : loops) {
            attempt(failures, loop::close);
        }
        attempt(failures, () -> HostAssertions.assertNoMountsUnder(dir));
        if (!failures.isEmpty()) {
            AssertionError error = new AssertionError("cleanup of " + dir + " failed");
            failures.forEach(error::addSuppressed);
            throw error;
        }
    }

    private interface Step {
        void run() throws Exception;
    }

    private static void attempt(List<Throwable> failures, Step step) {
        try {
            step.run();
        } catch (Exception | AssertionError e) {
            failures.add(e);
        }
    }

    @ParameterizedTest
    @EnumSource(Way.class)
    void theBindHasItsFlagsInThePeerTooAndKeepsThoseOfItsSource(Way way) throws Exception {
        Path source = Files.createDirectories(dir.resolve("source"));
        mountForTheTest("tmpfs", source, "tmpfs", LinuxNative.MS_NOSUID, "size=1m"); // nosuid is inherited
        Files.writeString(source.resolve("marker"), "here");
        Path target = Files.createDirectories(shared.resolve("target"));

        mounter(way).bind(source, target, MountOptions.parse(List.of("ro", "nodev", "noexec", "noatime")));

        for (Path seen : List.of(target, peer.resolve("target"))) {
            assertEquals(List.of("noatime", "nodev", "noexec", "nosuid", "ro"), options(seen), "mountinfo of " + seen);
        }
        assertEquals("here", Files.readString(peer.resolve("target/marker")));
        assertTrue(options(source).contains("rw"), "the source's own mount keeps its flags: " + options(source));
        assertMovedOnlyIf(way);
    }

    @ParameterizedTest
    @EnumSource(Way.class)
    void aDeviceNodeIsBoundReadOnlyOntoAFileByDescriptor(Way way) throws Exception {
        LoopDevice loop = LoopDevice.create(dir, "disk", 1 << 20);
        loops.add(loop);
        Path file = Files.createFile(shared.resolve("device"));

        int directory = LinuxNative.openDirectory(shared.toString());
        int opened = LinuxNative.openBeneath(directory, "device", 0);
        try { // onto /proc/self/fd/N, as the publisher binds onto the target it opened
            mounter(way).bind(loop.device(), Path.of("/proc/self/fd/" + opened), MountOptions.NONE.withReadOnly());
        } finally {
            LinuxNative.close(opened);
            LinuxNative.close(directory);
        }

        assertTrue(LinuxNative.isMountPoint(file.toString()));
        assertTrue(options(peer.resolve("device")).contains("ro"), options(peer.resolve("device")).toString());
        assertMovedOnlyIf(way);
    }

    @Test
    void withoutFlagsItIsAPlainBind() throws Exception {
        Path source = Files.createDirectories(dir.resolve("source"));
        Path target = Files.createDirectories(shared.resolve("target"));
        AtomicInteger calls = new AtomicInteger();
        LinuxMounter mounter = new LinuxMounter(HostPaths.real(), attempt -> { }, scratch,
                (s, t, set, clear) -> calls.incrementAndGet());

        mounter.bind(source, target, MountOptions.parse(List.of("data=ordered")));

        assertTrue(options(peer.resolve("target")).contains("rw"));
        assertEquals(0, calls.get(), "mount(2) with MS_BIND: nothing to carry");
    }

    @Test
    void afterOneEnosysEveryBindIsMovedAndAFailureNamesTheKernelsLimitAndLeavesNothing() throws Exception {
        Path source = Files.createDirectories(dir.resolve("source"));
        AtomicInteger calls = new AtomicInteger();
        LinuxMounter mounter = new LinuxMounter(HostPaths.real(), attempt -> { }, scratch, (s, t, set, clear) -> {
            calls.incrementAndGet();
            throw NO_MOUNT_API;
        });
        Path first = Files.createDirectories(shared.resolve("first"));
        mounter.bind(source, first, MountOptions.NONE.withReadOnly());

        IOException failed = assertThrows(IOException.class,
                () -> mounter.bind(source, shared.resolve("absent"), MountOptions.NONE.withReadOnly()));

        assertEquals(1, calls.get(), "the new mount API is tried once");
        assertTrue(failed.getMessage().contains("mount_setattr, Linux 5.12") && failed.getMessage().contains("ENOENT"),
                failed.getMessage());
        assertEquals(List.of(), HostAssertions.mountsUnder(scratch).stream().filter(m -> !m.equals(scratch)).toList());
        try (Stream<Path> slots = Files.list(scratch)) {
            assertEquals(List.of(), slots.toList(), "no slot left in the scratch mount");
        }
        assertTrue(options(peer.resolve("first")).contains("ro"));
    }

    @Test
    void anotherErrorOfTheMountApiIsTheBindsOwnAndNothingIsMoved() {
        NativeIOException invalid = new NativeIOException("mount_setattr", "a -> b", 22, "EINVAL", "Invalid argument");
        LinuxMounter mounter = new LinuxMounter(HostPaths.real(), attempt -> { }, scratch, (s, t, set, clear) -> {
            throw invalid;
        });

        IOException failed = assertThrows(IOException.class,
                () -> mounter.bind(dir, shared, MountOptions.NONE.withReadOnly()));

        // The JNI exception itself, re-typed at the os seam: its message, its errno, nothing added.
        assertInstanceOf(dev.blocknode.os.InvalidSyscallArgumentException.class, failed);
        assertEquals(invalid.getMessage(), failed.getMessage());
        assertFalse(Files.exists(scratch), "no scratch mount where the new mount API is there");
    }

    @Test
    void whatAnEarlierRunLeftInTheScratchMountIsTakenAway() throws Exception {
        Path source = Files.createDirectories(dir.resolve("source"));
        Files.createDirectories(scratch);
        LinuxNative.mount("blocknode-binds", scratch.toString(), "tmpfs", 0, "mode=0700");
        Path leftover = Files.createDirectories(scratch.resolve("bind-1"));
        LinuxNative.mount(source.toString(), leftover.toString(), null, LinuxNative.MS_BIND, null);
        Path target = Files.createDirectories(shared.resolve("target"));

        mounter(Way.MOVED).bind(source, target, MountOptions.NONE.withReadOnly());

        assertFalse(Files.exists(leftover), "unmounted and removed");
        assertEquals(List.of(scratch), HostAssertions.mountsUnder(scratch));
        assertTrue(options(target).contains("ro"));
    }

    private LinuxMounter mounter(Way way) {
        LinuxMounter.AttachedBind attached = way == Way.MOUNT_API ? LinuxNative::bindWithAttributes
                : (s, t, set, clear) -> {
                    throw NO_MOUNT_API;
                };
        return new LinuxMounter(HostPaths.real(), attempt -> { }, scratch, attached);
    }

    /** The scratch tmpfs exists, private and empty, only where binds were moved. */
    private void assertMovedOnlyIf(Way way) throws IOException {
        if (way == Way.MOUNT_API) {
            assertFalse(Files.exists(scratch));
            return;
        }
        String line = Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
                .filter(l -> l.split(" ")[4].equals(scratch.toString())).findFirst().orElseThrow();
        assertFalse(line.contains("shared:"), "the scratch mount is private: " + line);
        try (Stream<Path> slots = Files.list(scratch)) {
            assertEquals(List.of(), slots.toList());
        }
    }

    /** The sorted per-mount options (mountinfo's field 6, less relatime) of the top mount at {@code mountPoint}. */
    private static List<String> options(Path mountPoint) throws IOException {
        MountEntry entry = MountTable.read(Path.of("/proc/self/mountinfo")).stream()
                .filter(e -> e.mountPoint().equals(mountPoint)).reduce((first, last) -> last)
                .orElseThrow(() -> new AssertionError("nothing mounted at " + mountPoint));
        return Stream.of(entry.mountOptions().split(",")).filter(o -> !o.equals("relatime")).sorted().toList();
    }

    private void mountForTheTest(String source, Path target, String fsType, long flags, String data)
            throws IOException {
        LinuxNative.mount(source, target.toString(), fsType, flags, data);
        fixtureMounts.add(target);
    }
}
