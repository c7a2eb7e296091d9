package dev.blocknode.os.natives;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static dev.blocknode.os.natives.Failures.failsWith;
import static dev.blocknode.os.natives.LinuxNative.MOUNT_ATTR_NOATIME;
import static dev.blocknode.os.natives.LinuxNative.MOUNT_ATTR_NODEV;
import static dev.blocknode.os.natives.LinuxNative.MOUNT_ATTR_NOEXEC;
import static dev.blocknode.os.natives.LinuxNative.MOUNT_ATTR_NOSUID;
import static dev.blocknode.os.natives.LinuxNative.MOUNT_ATTR_RDONLY;
import static dev.blocknode.os.natives.LinuxNative.MOUNT_ATTR_STRICTATIME;
import static dev.blocknode.os.natives.LinuxNative.MOUNT_ATTR__ATIME;
import static dev.blocknode.os.natives.LinuxNative.MS_BIND;
import static dev.blocknode.os.natives.LinuxNative.MS_RDONLY;
import static dev.blocknode.os.natives.LinuxNative.MS_REMOUNT;
import static dev.blocknode.os.natives.LinuxNative.MS_SHARED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * bindWithAttributes against the real kernel, in a shared tmpfs with a peer: the peer stands for the host's
 * mount namespace, which receives every mount the plugin makes under the kubelet root. Needs root; everything
 * is undone by HostFixture (an unmount in the shared tmpfs is propagated to the peer too).
 */
@Tag("host")
class BindWithAttributesHostTest {

    private HostFixture host;
    private Path source;
    private Path shared;
    private Path peer;

    @BeforeEach
    void setUp() throws Exception {
        host = HostFixture.create();
        source = host.dir("source");
        Files.writeString(source.resolve("marker"), "here");
        shared = host.dir("shared");
        peer = host.dir("peer");
        host.mount("tmpfs", shared, "tmpfs", 0, "size=1m");
        LinuxNative.mount(null, shared.toString(), null, MS_SHARED, null);
        // A peer of shared: what is mounted there appears here too.
        host.mount(shared.toString(), peer, null, MS_BIND, null);
        Files.createDirectories(shared.resolve("target"));
    }

    @AfterEach
    void tearDown() throws Exception {
        host.close();
    }

    @Test
    void theCopyInAPeerHasTheAttributesToo() throws Exception {
        Path target = shared.resolve("target");

        LinuxNative.bindWithAttributes(source.toString(), target.toString(),
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, 0);
        host.mounted(target);

        for (Path seen : List.of(target, peer.resolve("target"))) {
            List<String> options = HostFixture.mountOptions(seen);
            assertTrue(options.containsAll(List.of("ro", "nosuid", "nodev", "noexec")), seen + ": " + options);
        }
        assertEquals("here", Files.readString(peer.resolve("target/marker")));
        assertThrows(FileSystemException.class, () -> Files.writeString(peer.resolve("target/x"), "x"));
        Files.writeString(source.resolve("still-writable"), "the source's own mount keeps its flags");
    }

    /** The kernel's behaviour that bindWithAttributes exists for: a remount after the bind stays at home. */
    @Test
    void aRemountAfterTheBindIsNotPropagated() throws Exception {
        Path target = shared.resolve("target");

        host.mount(source.toString(), target, null, MS_BIND, null);
        host.mount(null, target, null, MS_REMOUNT | MS_BIND | MS_RDONLY, null);

        assertTrue(HostFixture.mountOptions(target).contains("ro"));
        List<String> inPeer = HostFixture.mountOptions(peer.resolve("target"));
        assertTrue(inPeer.contains("rw"), "if this fails, the kernel now propagates remounts: " + inPeer);
    }

    @Test
    void aTargetByDescriptorAndTheAtimeSetting() throws Exception {
        Path target = shared.resolve("target");
        int directory = LinuxNative.openDirectory(shared.toString());
        int opened = LinuxNative.openBeneath(directory, "target", LinuxNative.OPEN_DIRECTORY);
        try {
            LinuxNative.bindWithAttributes(source.toString(), "/proc/self/fd/" + opened,
                    MOUNT_ATTR_NOATIME, MOUNT_ATTR__ATIME);
            host.mounted(target);
        } finally {
            LinuxNative.close(opened);
            LinuxNative.close(directory);
        }

        assertTrue(LinuxNative.isMountPoint(target.toString()), "mounted onto the directory the descriptor names");
        for (Path seen : List.of(target, peer.resolve("target"))) {
            List<String> options = HostFixture.mountOptions(seen);
            assertTrue(options.contains("noatime") && options.contains("rw"), seen + ": " + options);
        }
    }

    @Test
    void aDeviceNodeOntoAFileReadOnly() throws Exception {
        LoopDevice loop = host.loop("disk.img", 1 << 20, false);
        Path file = shared.resolve("device");
        Files.createFile(file);

        LinuxNative.bindWithAttributes(loop.device, file.toString(), MOUNT_ATTR_RDONLY, 0);
        host.mounted(file);

        long[] stat = LinuxNative.stat(peer.resolve("device").toString());
        assertEquals(LinuxNative.S_IFBLK, stat[LinuxNative.STAT_MODE] & LinuxNative.S_IFMT);
        assertEquals(loop.majorMinor(), stat[LinuxNative.STAT_RDEV_MAJOR] + ":" + stat[LinuxNative.STAT_RDEV_MINOR]);
        assertTrue(HostFixture.mountOptions(peer.resolve("device")).contains("ro"));
    }

    @Test
    void aFailureAtAnyStepLeavesNothingMountedAndNamesTheStep() throws Exception {
        Path target = shared.resolve("target");

        NativeIOException noSource = failsWith("ENOENT", () -> LinuxNative.bindWithAttributes(
                host.root.resolve("absent").toString(), target.toString(), MOUNT_ATTR_RDONLY, 0));
        assertEquals("open_tree", noSource.syscall());
        assertEquals(host.root.resolve("absent") + " -> " + target, noSource.path());

        // Two atime settings at once: the kernel refuses the attributes after the copy was made.
        NativeIOException badAttributes = assertThrows(NativeIOException.class,
                () -> LinuxNative.bindWithAttributes(source.toString(), target.toString(),
                        MOUNT_ATTR_NOATIME | MOUNT_ATTR_STRICTATIME, MOUNT_ATTR__ATIME));
        assertEquals("mount_setattr", badAttributes.syscall());
        assertEquals("EINVAL", badAttributes.errnoName());

        NativeIOException noTarget = failsWith("ENOENT", () -> LinuxNative.bindWithAttributes(
                source.toString(), shared.resolve("absent").toString(), MOUNT_ATTR_RDONLY, 0));
        assertEquals("move_mount", noTarget.syscall());

        assertFalse(LinuxNative.isMountPoint(target.toString()));
        assertEquals(List.of(), HostFixture.mountPoints().stream()
                .filter(m -> m.startsWith(shared + "/") || m.startsWith(peer + "/")).toList());
    }
}
