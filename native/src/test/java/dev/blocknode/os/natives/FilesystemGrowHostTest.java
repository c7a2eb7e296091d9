package dev.blocknode.os.natives;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.RandomAccessFile;
import java.nio.file.Path;

import static dev.blocknode.os.natives.Failures.failsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Growing a mounted xfs and ext4 by descriptor (reopenDirectory, xfsGeometry, xfsGrowData, ext4Resize) on loop
 * devices that are grown under them: needs root. ext4's online resize also needs CAP_SYS_RESOURCE, which the
 * test machine may lack: there the kernel's EPERM must come back, named as such.
 */
@Tag("host")
class FilesystemGrowHostTest {

    private static final long SIZE = 320L << 20;

    private HostFixture host;

    @BeforeEach
    void setUp() throws Exception {
        host = HostFixture.create();
    }

    @AfterEach
    void tearDown() throws Exception {
        host.close();
    }

    /** A loop device of SIZE formatted with {@code mkfs} and mounted at a new directory; its device grown to twice. */
    private Path mountedThenDeviceGrown(String name, String... mkfs) throws Exception {
        LoopDevice loop = host.loop(name + ".img", SIZE, false);
        String[] argv = java.util.Arrays.copyOf(mkfs, mkfs.length + 1);
        argv[mkfs.length] = loop.device;
        Commands.run(argv);
        Path target = host.dir(name);
        host.mount(loop.device, target, name, 0, null);
        try (RandomAccessFile file = new RandomAccessFile(loop.backingFile.toFile(), "rw")) {
            file.setLength(2 * SIZE);
        }
        Commands.run("losetup", "-c", loop.device);
        assertEquals(2 * SIZE, LinuxNative.blockDeviceSize(loop.device));
        return target;
    }

    /** The O_PATH descriptor the plugin holds, opened again for reading; both closed by the fixture. */
    private int reopened(Path directory) throws Exception {
        int pathFd = LinuxNative.openDirectory(directory.toString());
        host.closeLater(() -> LinuxNative.close(pathFd));
        int fd = LinuxNative.reopenDirectory(pathFd);
        host.closeLater(() -> LinuxNative.close(fd));
        long[] viaPath = LinuxNative.statAt(pathFd, "");
        long[] viaReopened = LinuxNative.statAt(fd, "");
        assertEquals(viaPath[LinuxNative.STAT_INODE], viaReopened[LinuxNative.STAT_INODE], "the same directory");
        assertEquals(viaPath[LinuxNative.STAT_DEV_MINOR], viaReopened[LinuxNative.STAT_DEV_MINOR]);
        return fd;
    }

    @Test
    void xfsGrowsByDescriptorToTheBlocksAsked() throws Exception {
        Path mounted = mountedThenDeviceGrown("xfs", "mkfs.xfs", "-q");
        int fd = reopened(mounted);

        long[] before = LinuxNative.xfsGeometry(fd);
        long blockSize = before[LinuxNative.XFS_GEOMETRY_BLOCK_SIZE];
        assertEquals(4096, blockSize);
        assertEquals(SIZE / blockSize, before[LinuxNative.XFS_GEOMETRY_DATA_BLOCKS]);
        assertEquals(25, before[LinuxNative.XFS_GEOMETRY_IMAXPCT], "mkfs.xfs's default for this size");
        long totalBefore = LinuxNative.fstatvfs(fd)[LinuxNative.STATVFS_BLOCKS];

        LinuxNative.xfsGrowData(fd, 2 * SIZE / blockSize, (int) before[LinuxNative.XFS_GEOMETRY_IMAXPCT]);

        long[] after = LinuxNative.xfsGeometry(fd);
        assertEquals(2 * SIZE / blockSize, after[LinuxNative.XFS_GEOMETRY_DATA_BLOCKS]);
        assertEquals(before[LinuxNative.XFS_GEOMETRY_IMAXPCT], after[LinuxNative.XFS_GEOMETRY_IMAXPCT]);
        long totalAfter = LinuxNative.fstatvfs(fd)[LinuxNative.STATVFS_BLOCKS];
        assertTrue(totalAfter > totalBefore + SIZE / blockSize * 9 / 10, totalBefore + " -> " + totalAfter);

        // Past the device's end: the kernel reads the new last block first and refuses.
        NativeIOException beyond = assertThrows(NativeIOException.class,
                () -> LinuxNative.xfsGrowData(fd, 3 * SIZE / blockSize, (int) after[LinuxNative.XFS_GEOMETRY_IMAXPCT]));
        assertTrue(beyond.getMessage().contains("XFS_IOC_FSGROWFSDATA"), beyond.getMessage());
        assertEquals(2 * SIZE / blockSize, LinuxNative.xfsGeometry(fd)[LinuxNative.XFS_GEOMETRY_DATA_BLOCKS]);
    }

    @Test
    void ext4ResizeByDescriptorGrowsOrNeedsCapSysResource() throws Exception {
        Path mounted = mountedThenDeviceGrown("ext4", "mkfs.ext4", "-q", "-b", "4096");
        int fd = reopened(mounted);
        long blockSize = LinuxNative.fstatvfs(fd)[LinuxNative.STATVFS_BSIZE];
        assertEquals(4096, blockSize);
        long totalBefore = LinuxNative.fstatvfs(fd)[LinuxNative.STATVFS_BLOCKS];

        try {
            LinuxNative.ext4Resize(fd, 2 * SIZE / blockSize);
        } catch (NativeIOException noCapability) {
            // Without CAP_SYS_RESOURCE (this machine's sandbox): ext4_resize_begin's EPERM, nothing changed.
            assertEquals("EPERM", noCapability.errnoName(), noCapability.getMessage());
            assertTrue(noCapability.getMessage().contains("EXT4_IOC_RESIZE_FS"), noCapability.getMessage());
            assertEquals(totalBefore, LinuxNative.fstatvfs(fd)[LinuxNative.STATVFS_BLOCKS]);
            return;
        }
        long totalAfter = LinuxNative.fstatvfs(fd)[LinuxNative.STATVFS_BLOCKS];
        assertTrue(totalAfter > totalBefore + SIZE / blockSize * 9 / 10, totalBefore + " -> " + totalAfter);
    }

    @Test
    void theIoctlsOfOneFilesystemAreRefusedOnAnother() throws Exception {
        Path mounted = mountedThenDeviceGrown("ext4", "mkfs.ext4", "-q");
        int fd = reopened(mounted);
        failsWith("ENOTTY", () -> LinuxNative.xfsGeometry(fd));
        failsWith("ENOTTY", () -> LinuxNative.xfsGrowData(fd, 1L << 20, 25));
    }

    @Test
    void anOPathDescriptorTakesNoIoctlAndIsReopenedOnlyAsADirectory() throws Exception {
        Path directory = host.dir("plain");
        int pathFd = LinuxNative.openDirectory(directory.toString());
        host.closeLater(() -> LinuxNative.close(pathFd));
        NativeIOException onPath = assertThrows(NativeIOException.class, () -> LinuxNative.xfsGeometry(pathFd));
        assertEquals("EBADF", onPath.errnoName());

        Path file = host.file("plain/file");
        int root = LinuxNative.openDirectory(directory.toString());
        host.closeLater(() -> LinuxNative.close(root));
        int fileFd = LinuxNative.openBeneath(root, file.getFileName().toString(), 0);
        host.closeLater(() -> LinuxNative.close(fileFd));
        failsWith("ENOTDIR", () -> LinuxNative.reopenDirectory(fileFd));
    }
}
