package dev.blocknode.os.natives;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;

import static dev.blocknode.os.natives.LinuxNative.MS_BIND;
import static dev.blocknode.os.natives.LinuxNative.MS_NODEV;
import static dev.blocknode.os.natives.LinuxNative.MS_NOSUID;
import static dev.blocknode.os.natives.LinuxNative.MS_PRIVATE;
import static dev.blocknode.os.natives.LinuxNative.MS_RDONLY;
import static dev.blocknode.os.natives.LinuxNative.MS_REMOUNT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Real mounts: needs root. Everything is undone by HostFixture, also when a test fails. */
@Tag("host")
class MountHostTest {

    private static final long MIB = 1024 * 1024;

    private HostFixture host;

    @BeforeEach
    void setUp() throws Exception {
        host = HostFixture.create();
    }

    @AfterEach
    void tearDown() throws Exception {
        host.close();
    }

    @Test
    void tmpfsMountIsAMountPointUntilUnmounted() throws Exception {
        Path target = host.dir("tmpfs");
        assertFalse(LinuxNative.isMountPoint(target.toString()));
        assertEquals(0, LinuxNative.stat(target.toString())[LinuxNative.STAT_MOUNT_ROOT]);

        host.mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "size=8m,mode=0755");

        assertTrue(LinuxNative.isMountPoint(target.toString()));
        assertEquals(1, LinuxNative.stat(target.toString())[LinuxNative.STAT_MOUNT_ROOT]);
        assertTrue(HostFixture.mountPoints().contains(target.toString()));
        // A propagation change: source, fsType and data all null.
        LinuxNative.mount(null, target.toString(), null, MS_PRIVATE, null);

        LinuxNative.umount2(target.toString(), 0);
        host.unmounted(target);

        assertFalse(LinuxNative.isMountPoint(target.toString()));
        assertEquals(0, LinuxNative.stat(target.toString())[LinuxNative.STAT_MOUNT_ROOT]);
        assertFalse(HostFixture.mountPoints().contains(target.toString()));
    }

    @Test
    void bindMountsOfADirectoryAndOfADeviceNodeOntoAFileAreMountPoints() throws Exception {
        Path source = host.dir("source");
        Files.writeString(source.resolve("marker"), "here");
        Path directory = host.dir("bound-directory");
        LoopDevice loop = host.loop("disk.img", 64 * MIB, false);
        Path file = host.file("bound-device");
        assertFalse(LinuxNative.isMountPoint(file.toString()));

        host.mount(source.toString(), directory, null, MS_BIND, null);
        host.mount(loop.device, file, null, MS_BIND, null);

        assertTrue(LinuxNative.isMountPoint(directory.toString()));
        assertEquals("here", Files.readString(directory.resolve("marker")));
        assertTrue(LinuxNative.isMountPoint(file.toString()));
        long[] stat = LinuxNative.stat(file.toString());
        assertEquals(LinuxNative.S_IFBLK, stat[LinuxNative.STAT_MODE] & LinuxNative.S_IFMT);
        assertEquals(loop.majorMinor(), stat[LinuxNative.STAT_RDEV_MAJOR] + ":" + stat[LinuxNative.STAT_RDEV_MINOR]);
        assertEquals(1, stat[LinuxNative.STAT_MOUNT_ROOT]);

        LinuxNative.umount2(file.toString(), 0);
        host.unmounted(file);
        LinuxNative.umount2(directory.toString(), 0);
        host.unmounted(directory);

        assertFalse(LinuxNative.isMountPoint(file.toString()));
        assertFalse(LinuxNative.isMountPoint(directory.toString()));
        assertEquals(LinuxNative.S_IFREG, LinuxNative.stat(file.toString())[LinuxNative.STAT_MODE] & LinuxNative.S_IFMT);
    }

    @Test
    void aSymlinkToAMountPointIsNotOneItself() throws Exception {
        Path target = host.dir("tmpfs");
        host.mount("tmpfs", target, "tmpfs", 0, "size=1m");
        Path link = Files.createSymbolicLink(host.root.resolve("link"), target);

        assertTrue(LinuxNative.isMountPoint(target.toString()));
        assertFalse(LinuxNative.isMountPoint(link.toString()));
    }

    @Test
    void statvfsOfASizedTmpfsAndOfAReadOnlyBindRemount() throws Exception {
        Path tmpfs = host.dir("tmpfs");
        host.mount("tmpfs", tmpfs, "tmpfs", 0, "size=8m");

        long[] vfs = LinuxNative.statvfs(tmpfs.toString());
        assertEquals(8 * MIB, vfs[LinuxNative.STATVFS_BLOCKS] * vfs[LinuxNative.STATVFS_FRSIZE]);
        assertEquals(0, vfs[LinuxNative.STATVFS_FLAG] & LinuxNative.ST_RDONLY);

        Path readOnly = host.dir("read-only");
        host.mount(tmpfs.toString(), readOnly, null, MS_BIND, null);
        host.mount(null, readOnly, null, MS_REMOUNT | MS_BIND | MS_RDONLY, null);

        assertEquals(LinuxNative.ST_RDONLY,
                LinuxNative.statvfs(readOnly.toString())[LinuxNative.STATVFS_FLAG] & LinuxNative.ST_RDONLY);
        assertEquals(0, LinuxNative.statvfs(tmpfs.toString())[LinuxNative.STATVFS_FLAG] & LinuxNative.ST_RDONLY);
        assertThrows(FileSystemException.class, () -> Files.writeString(readOnly.resolve("x"), "x"));
        Files.writeString(tmpfs.resolve("x"), "x");
    }

    @Test
    void fstatvfsAnswersForTheOpenedMountEvenWhenItsPathIsMountedOver() throws Exception {
        Path tmpfs = host.dir("sized");
        host.mount("tmpfs", tmpfs, "tmpfs", 0, "size=8m");
        host.mount(null, tmpfs, null, MS_REMOUNT | MS_RDONLY, "size=8m");
        int root = LinuxNative.openDirectory(tmpfs.getParent().toString());
        int opened = LinuxNative.openBeneath(root, tmpfs.getFileName().toString(), 0);
        LinuxNative.close(root);
        try {
            host.mount("tmpfs", tmpfs, "tmpfs", 0, "size=4m"); // the name now shows another filesystem
            long[] vfs = LinuxNative.fstatvfs(opened);
            assertEquals(LinuxNative.STATVFS_LENGTH, vfs.length);
            assertEquals(8 * MIB, vfs[LinuxNative.STATVFS_BLOCKS] * vfs[LinuxNative.STATVFS_FRSIZE]);
            assertEquals(LinuxNative.ST_RDONLY, vfs[LinuxNative.STATVFS_FLAG] & LinuxNative.ST_RDONLY);
            long[] byName = LinuxNative.statvfs(tmpfs.toString());
            assertEquals(4 * MIB, byName[LinuxNative.STATVFS_BLOCKS] * byName[LinuxNative.STATVFS_FRSIZE]);
            assertEquals(0, byName[LinuxNative.STATVFS_FLAG] & LinuxNative.ST_RDONLY);
        } finally {
            LinuxNative.close(opened);
        }
    }
}
