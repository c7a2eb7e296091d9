package dev.blocknode.os.natives;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.nio.file.Files;
import java.nio.file.Path;

import static dev.blocknode.os.natives.Failures.failsWith;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** LinuxNative calls that need no root: stat, statvfs, fsync, and their failures. */
class LinuxNativeUnitTest {

    @TempDir
    Path tmp;

    @Test
    void openBlockDeviceRefusesAFileAndALink() throws Exception {
        Path file = Files.writeString(tmp.resolve("plain"), "x");
        Path link = Files.createSymbolicLink(tmp.resolve("link"), file);

        NativeIOException notBlock = assertThrows(NativeIOException.class,
                () -> LinuxNative.openBlockDevice(file.toString()));
        assertEquals("ENOTBLK", notBlock.errnoName());
        assertEquals(file.toString(), notBlock.path());
        NativeIOException followed = assertThrows(NativeIOException.class,
                () -> LinuxNative.openBlockDevice(link.toString()));
        assertEquals("ELOOP", followed.errnoName(), "the node itself, never where a link points");
        failsWith("ENOENT", () -> LinuxNative.openBlockDevice(tmp.resolve("none").toString()));
    }

    @Test
    void openForReadingReadsAFileAndNeitherFollowsALinkNorWaitsForAFifosWriter() throws Exception {
        Path file = Files.writeString(tmp.resolve("record"), "0123456789");
        int fd = LinuxNative.openForReading(file.toString());
        try {
            byte[] buffer = new byte[16];
            assertEquals(4, LinuxNative.read(fd, buffer, 2, 4));
            assertEquals("0123", new String(buffer, 2, 4, java.nio.charset.StandardCharsets.US_ASCII));
            assertEquals(6, LinuxNative.read(fd, buffer, 0, 16));
            assertEquals(0, LinuxNative.read(fd, buffer, 0, 16), "the end of the file");
            failsWith("EINVAL", () -> LinuxNative.read(fd, buffer, 10, 7));
        } finally {
            LinuxNative.close(fd);
        }
        Path link = Files.createSymbolicLink(tmp.resolve("link"), Path.of("/dev/zero"));
        assertEquals("ELOOP", assertThrows(NativeIOException.class,
                () -> LinuxNative.openForReading(link.toString())).errnoName());
        Path fifo = tmp.resolve("fifo");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        int fifoFd = LinuxNative.openForReading(fifo.toString()); // would block for ever without O_NONBLOCK
        try {
            long type = LinuxNative.statAt(fifoFd, "")[LinuxNative.STAT_MODE] & LinuxNative.S_IFMT;
            assertEquals(0010000L, type, "statAt(fd, \"\") says what was opened: a FIFO");
        } finally {
            LinuxNative.close(fifoFd);
        }
        failsWith("ENOENT", () -> LinuxNative.openForReading(tmp.resolve("none").toString()));
    }

    @Test
    void scsiCommandRefusesACdbShorterThanSixBytesBeforeTouchingTheDescriptor() {
        NativeIOException e = failsWith("EINVAL",
                () -> LinuxNative.scsiCommand(-1, new byte[3], LinuxNative.SCSI_NO_DATA, null, new byte[32], 1_000));
        assertEquals("SG_IO", e.syscall());
        failsWith("EINVAL", () -> LinuxNative.scsiCommand(-1,
                new byte[6], LinuxNative.SCSI_FROM_DEVICE, null, new byte[32], 1_000)); // data in needs a buffer
    }

    @Test
    void scsiCommandOnADescriptorThatIsNotOpenFails() {
        NativeIOException e = assertThrows(NativeIOException.class,
                () -> LinuxNative.scsiCommand(-1, new byte[6], LinuxNative.SCSI_NO_DATA, null, new byte[32], 1_000));
        assertEquals("EBADF", e.errnoName());
        assertEquals("descriptor -1", e.path());
    }

    @Test
    void nvmeIoCommandRefusesBadArgumentsBeforeTouchingTheDescriptor() {
        NativeIOException e = failsWith("EINVAL",
                () -> LinuxNative.nvmeIoCommand(-1, 0x0e, 1, new int[5], new byte[64], 1_000));
        assertEquals("NVME_IOCTL_IO_CMD", e.syscall(), "dwords 10 to 15 are six");
        failsWith("EINVAL", () -> LinuxNative.nvmeIoCommand(-1, 0x100, 1, new int[6], null, 1_000));
        failsWith("EINVAL", () -> LinuxNative.nvmeIoCommand(-1, 0x0e, 1, new int[6], new byte[64], 0));
    }

    @Test
    void nvmeCommandsOnWhatIsNotAnNvmeNamespaceFail() throws Exception {
        NativeIOException closed = assertThrows(NativeIOException.class,
                () -> LinuxNative.nvmeIoCommand(-1, 0x0e, 1, new int[6], new byte[64], 1_000));
        assertEquals("EBADF", closed.errnoName());
        assertEquals("descriptor -1", closed.path());
        Path file = Files.writeString(tmp.resolve("plain"), "x");
        int fd = LinuxNative.openForReading(file.toString());
        try {
            assertEquals("ENOTTY", assertThrows(NativeIOException.class,
                    () -> LinuxNative.nvmeNamespaceId(fd)).errnoName());
            assertEquals("ENOTTY", assertThrows(NativeIOException.class,
                    () -> LinuxNative.nvmeIoCommand(fd, 0x0e, 1, new int[6], new byte[64], 1_000)).errnoName());
        } finally {
            LinuxNative.close(fd);
        }
    }

    @Test
    void statOfTheRootDirectory() throws NativeIOException {
        long[] stat = LinuxNative.stat("/");
        assertEquals(LinuxNative.STAT_LENGTH, stat.length);
        assertEquals(LinuxNative.S_IFDIR, stat[LinuxNative.STAT_MODE] & LinuxNative.S_IFMT);
        assertEquals(1, stat[LinuxNative.STAT_MOUNT_ROOT], "Linux >= 5.8 reports STATX_ATTR_MOUNT_ROOT");
        assertTrue(LinuxNative.isMountPoint("/"));
    }

    @Test
    void aPlainDirectoryAndFileAreNoMountPoints() throws Exception {
        Path file = Files.writeString(tmp.resolve("file"), "x");
        assertFalse(LinuxNative.isMountPoint(tmp.toString()));
        assertFalse(LinuxNative.isMountPoint(file.toString()));

        long[] stat = LinuxNative.stat(file.toString());
        assertEquals(LinuxNative.S_IFREG, stat[LinuxNative.STAT_MODE] & LinuxNative.S_IFMT);
        assertEquals(0, stat[LinuxNative.STAT_MOUNT_ROOT]);
        assertEquals(0, stat[LinuxNative.STAT_RDEV_MAJOR]);
        // Cross-check with the JDK's own lstat: full st_mode and the glibc dev_t encoding.
        assertEquals(((Integer) Files.getAttribute(file, "unix:mode")).longValue(), stat[LinuxNative.STAT_MODE]);
        long dev = (Long) Files.getAttribute(file, "unix:dev");
        assertEquals(((dev >>> 8) & 0xfff) | ((dev >>> 32) & ~0xfffL), stat[LinuxNative.STAT_DEV_MAJOR]);
        assertEquals((dev & 0xff) | ((dev >>> 12) & ~0xffL), stat[LinuxNative.STAT_DEV_MINOR]);
    }

    @Test
    void statDoesNotFollowTheFinalSymlink() throws Exception {
        Path link = Files.createSymbolicLink(tmp.resolve("link-to-root"), Path.of("/"));
        long[] stat = LinuxNative.stat(link.toString());
        assertEquals(LinuxNative.S_IFLNK, stat[LinuxNative.STAT_MODE] & LinuxNative.S_IFMT);
        assertEquals(0, stat[LinuxNative.STAT_MOUNT_ROOT]);
        assertFalse(LinuxNative.isMountPoint(link.toString()), "a symlink to a mount point is none itself");
        Files.delete(link); // before @TempDir's cleanup, which warns about links leaving the directory
    }

    @Test
    void nonAsciiPathsReachTheKernelIntact() throws Exception {
        Path dir = Files.createDirectory(tmp.resolve("dïr-ünïcødé"));
        assertEquals(LinuxNative.S_IFDIR, LinuxNative.stat(dir.toString())[LinuxNative.STAT_MODE] & LinuxNative.S_IFMT);
    }

    @Test
    void statvfsOfTheRootFileSystem() throws NativeIOException {
        long[] vfs = LinuxNative.statvfs("/");
        assertEquals(LinuxNative.STATVFS_LENGTH, vfs.length);
        assertTrue(vfs[LinuxNative.STATVFS_BSIZE] > 0);
        assertTrue(vfs[LinuxNative.STATVFS_FRSIZE] > 0);
        assertTrue(vfs[LinuxNative.STATVFS_BLOCKS] > 0);
        assertTrue(vfs[LinuxNative.STATVFS_BFREE] <= vfs[LinuxNative.STATVFS_BLOCKS]);
        assertTrue(vfs[LinuxNative.STATVFS_BAVAIL] <= vfs[LinuxNative.STATVFS_BFREE]);
        assertTrue(vfs[LinuxNative.STATVFS_FFREE] <= vfs[LinuxNative.STATVFS_FILES]);
    }

    @Test
    void fsyncOfAFileAndADirectory() throws Exception {
        Path file = Files.writeString(tmp.resolve("data"), "payload");
        LinuxNative.fsync(file.toString());
        LinuxNative.fsync(tmp.toString());
    }

    @Test
    void openBeneathResolvesInsideTheDirectoryAndRefusesEverySymlinkAndWayOut() throws Exception {
        Path root = Files.createDirectories(tmp.resolve("root/a/b"));
        root = tmp.resolve("root");
        Path outside = Files.createDirectories(tmp.resolve("outside"));
        Files.createSymbolicLink(root.resolve("inner"), Path.of("a")); // relative, stays inside: refused too
        Files.createSymbolicLink(root.resolve("escape"), Path.of("../outside"));
        Files.createSymbolicLink(root.resolve("absolute"), outside);
        Files.createSymbolicLink(root.resolve("a/last"), outside);
        Files.writeString(root.resolve("a/file"), "not a directory");
        int dir = LinuxNative.openDirectory(root.toString());
        try {
            for (int walk : new int[] {0, LinuxNative.OPEN_WALK}) {
                int b = LinuxNative.openBeneath(dir, "a/b", walk);
                assertEquals(LinuxNative.S_IFDIR, LinuxNative.statAt(b, "")[LinuxNative.STAT_MODE] & LinuxNative.S_IFMT);
                assertArrayEquals(LinuxNative.stat(root.resolve("a/b").toString()), LinuxNative.statAt(b, ""));
                LinuxNative.close(b);
                // the last element is not followed: the link itself is opened...
                int last = LinuxNative.openBeneath(dir, "a/last", walk);
                assertEquals(LinuxNative.S_IFLNK, LinuxNative.statAt(last, "")[LinuxNative.STAT_MODE] & LinuxNative.S_IFMT);
                LinuxNative.close(last);
                // ...unless a directory is asked for
                int asDirectory = walk | LinuxNative.OPEN_DIRECTORY;
                failsWith("ELOOP", () -> LinuxNative.openBeneath(dir, "a/last", asDirectory));
                for (String through : new String[] {"inner/b", "escape/x", "absolute/x", "a/last/x"}) {
                    NativeIOException e = assertThrows(NativeIOException.class,
                            () -> LinuxNative.openBeneath(dir, through, walk), through);
                    assertEquals("ELOOP", e.errnoName(), through);
                }
                for (String out : new String[] {"../outside", "a/../../outside", "/etc", "a/./b"}) {
                    NativeIOException e = failsWith("EXDEV", () -> LinuxNative.openBeneath(dir, out, walk));
                    assertEquals("openBeneath", e.syscall());
                }
                failsWith("ENOENT", () -> LinuxNative.openBeneath(dir, "a/missing", walk));
                failsWith("ENOTDIR", () -> LinuxNative.openBeneath(dir, "a/file/deeper", walk));
            }
            // Creating: every missing directory, relative to its parent; never through a link.
            int made = LinuxNative.openBeneath(dir, "a/new/deeper", LinuxNative.OPEN_CREATE_DIRECTORIES);
            assertTrue(Files.isDirectory(root.resolve("a/new/deeper")));
            assertTrue(LinuxNative.createFileAt(made, "file"), "created");
            assertFalse(LinuxNative.createFileAt(made, "file"), "there already");
            assertEquals(LinuxNative.S_IFREG, LinuxNative.statAt(made, "file")[LinuxNative.STAT_MODE] & LinuxNative.S_IFMT);
            assertNull(LinuxNative.statAt(made, "absent"));
            LinuxNative.unlinkAt(made, "file", false);
            assertNull(LinuxNative.statAt(made, "file"));
            failsWith("EXDEV", () -> LinuxNative.statAt(dir, "a/b")); // one element only
            failsWith("EXDEV", () -> LinuxNative.unlinkAt(dir, "..", true));
            LinuxNative.close(made);
            failsWith("ELOOP", () -> LinuxNative.openBeneath(dir, "escape/made", LinuxNative.OPEN_CREATE_DIRECTORIES));
            failsWith("ELOOP", () -> LinuxNative.openBeneath(dir, "a/last", LinuxNative.OPEN_CREATE_DIRECTORIES));
            assertFalse(LinuxNative.createFileAt(dir, "escape"), "a link is an entry: not created through");
            try (var left = Files.list(outside)) {
                assertEquals(0, left.count(), "nothing was created outside");
            }
        } finally {
            LinuxNative.close(dir);
        }
        for (String link : new String[] {"inner", "escape", "absolute", "a/last"}) {
            Files.delete(root.resolve(link)); // before @TempDir's cleanup, which warns about links leaving it
        }
    }

    @Test
    void aMissingPathIsEnoent() {
        String missing = tmp.resolve("missing").toString();
        NativeIOException e = assertThrows(NativeIOException.class, () -> LinuxNative.stat(missing));
        assertEquals("statx", e.syscall());
        assertEquals(missing, e.path());
        assertEquals(2, e.errno());
        assertEquals("ENOENT", e.errnoName());
        assertEquals("statx(" + missing + "): ENOENT (No such file or directory)", e.getMessage());

        failsWith("ENOENT", () -> LinuxNative.isMountPoint(missing));
        failsWith("ENOENT", () -> LinuxNative.statvfs(missing));
        NativeIOException open = failsWith("ENOENT", () -> LinuxNative.fsync(missing));
        assertEquals("open", open.syscall());
    }

    @Test
    void fstatvfsOfAnOpenedDirectoryAndOfADescriptorThatIsNotOpen() throws Exception {
        int fd = LinuxNative.openDirectory(tmp.toString());
        try {
            long[] byDescriptor = LinuxNative.fstatvfs(fd);
            long[] byName = LinuxNative.statvfs(tmp.toString());
            assertEquals(LinuxNative.STATVFS_LENGTH, byDescriptor.length);
            assertEquals(byName[LinuxNative.STATVFS_BLOCKS], byDescriptor[LinuxNative.STATVFS_BLOCKS]);
            assertEquals(byName[LinuxNative.STATVFS_FILES], byDescriptor[LinuxNative.STATVFS_FILES]);
            assertEquals(byName[LinuxNative.STATVFS_FLAG], byDescriptor[LinuxNative.STATVFS_FLAG]);
        } finally {
            LinuxNative.close(fd);
        }
        NativeIOException closed = assertThrows(NativeIOException.class, () -> LinuxNative.fstatvfs(fd));
        assertEquals("fstatvfs", closed.syscall());
        assertEquals("EBADF", closed.errnoName());
        assertEquals("descriptor " + fd, closed.path());
    }

    @Test
    void aPathThroughAFileIsEnotdir() throws Exception {
        Path file = Files.writeString(tmp.resolve("file"), "x");
        String below = file + "/below";
        NativeIOException e = assertThrows(NativeIOException.class, () -> LinuxNative.stat(below));
        assertEquals("ENOTDIR", e.errnoName());
        assertEquals(20, e.errno());
    }

    @Test
    void blockIoctlsOnARegularFileFailWithEnotty() throws Exception {
        String file = Files.writeString(tmp.resolve("not-a-device"), "x").toString();

        NativeIOException size = assertThrows(NativeIOException.class, () -> LinuxNative.blockDeviceSize(file));
        assertEquals("ioctl(BLKGETSIZE64)", size.syscall());
        assertEquals(file, size.path());
        assertEquals("ENOTTY", size.errnoName());
        assertEquals(25, size.errno());
        assertEquals("ioctl(BLKGETSIZE64)(" + file + "): ENOTTY (Inappropriate ioctl for device)", size.getMessage());

        NativeIOException sector = assertThrows(NativeIOException.class, () -> LinuxNative.blockSectorSize(file));
        assertEquals("ioctl(BLKSSZGET)", sector.syscall());
    }

    @Test
    void nullPathsAreNullPointerExceptions() {
        NullPointerException e = assertThrows(NullPointerException.class, () -> LinuxNative.stat(null));
        assertEquals("path must not be null", e.getMessage());
        assertThrows(NullPointerException.class, () -> LinuxNative.isMountPoint(null));
        assertThrows(NullPointerException.class, () -> LinuxNative.statvfs(null));
        assertThrows(NullPointerException.class, () -> LinuxNative.fsync(null));
        assertThrows(NullPointerException.class, () -> LinuxNative.umount2(null, 0));
        assertThrows(NullPointerException.class, () -> LinuxNative.blockDeviceSize(null));
        assertThrows(NullPointerException.class, () -> LinuxNative.blockSectorSize(null));
        assertThrows(NullPointerException.class, () -> LinuxNative.flushBlockBuffers(null));
        assertThrows(NullPointerException.class, () -> LinuxNative.openForReading(null));
        NullPointerException mount = assertThrows(NullPointerException.class,
                () -> LinuxNative.mount("none", null, "tmpfs", 0, null));
        assertEquals("target must not be null", mount.getMessage());
    }

    @Test
    void linuxNativeIsNotInstantiable() throws Exception {
        Constructor<LinuxNative> constructor = LinuxNative.class.getDeclaredConstructor();
        constructor.setAccessible(true);
        InvocationTargetException e = assertThrows(InvocationTargetException.class, constructor::newInstance);
        assertInstanceOf(AssertionError.class, e.getCause());
    }

    @Test
    void theKernelSaysItHasOpenat2AndMountSetattr() throws Exception {
        // Every kernel this project tests on is past 5.12 (both syscalls); the probes must not say otherwise,
        // and an older one must answer false rather than fail.
        String[] release = Files.readString(Path.of("/proc/sys/kernel/osrelease")).strip().split("[.-]");
        int version = Integer.parseInt(release[0]) * 1000 + Integer.parseInt(release[1]);
        assertEquals(version >= 5006, LinuxNative.kernelHasOpenat2(), "openat2 on " + String.join(".", release));
        assertEquals(version >= 5012, LinuxNative.kernelHasMountSetattr(), "mount_setattr");
    }
}
