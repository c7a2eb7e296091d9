package dev.blocknode.os.natives;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import static dev.blocknode.os.natives.LinuxNative.MS_RDONLY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Each errno the os layer tells apart, caused for real: needs root, loop devices, mkfs.ext4 and xfs_io. */
@Tag("host")
class HostExceptionHostTest {

    private static final long SIZE = 64L * 1024 * 1024;

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
    void sgIoOnALoopDeviceFailsAsAnIoctlTheDriverRefusesNotAsAScsiStatus() throws Exception {
        // This kernel's loop driver answers an ioctl it does not know with EINVAL (a regular file gives ENOTTY:
        // LinuxNativeUnitTest): either way a typed exception, never a status that could pass for a SCSI answer.
        LoopDevice loop = host.loop("not-scsi.img", SIZE, false);
        byte[] readReservation = {0x5e, 0x01, 0, 0, 0, 0, 0, 0, 24, 0};

        int fd = LinuxNative.openBlockDevice(loop.device);
        try {
            long[] stat = LinuxNative.statAt(fd, "");
            long[] byName = LinuxNative.stat(loop.device);
            assertEquals(byName[LinuxNative.STAT_RDEV_MAJOR], stat[LinuxNative.STAT_RDEV_MAJOR]);
            assertEquals(byName[LinuxNative.STAT_RDEV_MINOR], stat[LinuxNative.STAT_RDEV_MINOR],
                    "the descriptor's device number is the one its identity is checked by");

            NativeIOException e = assertThrows(NativeIOException.class,
                    () -> LinuxNative.scsiCommand(fd, readReservation, LinuxNative.SCSI_FROM_DEVICE,
                            new byte[24], new byte[32], 10_000));

            assertEquals("ioctl(SG_IO)", e.syscall());
            assertEquals("descriptor " + fd, e.path());
            assertEquals("EINVAL", e.errnoName());
        } finally {
            LinuxNative.close(fd);
        }
    }

    @Test
    void umount2OfADirectoryThatIsNoMountPointIsEinval() throws Exception {
        String dir = host.dir("plain").toString();

        NativeIOException e = assertThrows(NativeIOException.class,
                () -> LinuxNative.umount2(dir, 0));

        assertEquals("umount2", e.syscall());
        assertEquals(dir, e.path());
        assertEquals(22, e.errno());
        assertEquals("EINVAL", e.errnoName());
        assertEquals("umount2(" + dir + "): EINVAL (Invalid argument)", e.getMessage());
    }

    @Test
    void umount2WithAFileOpenInTheMountIsEbusy() throws Exception {
        Path target = host.dir("tmpfs");
        host.mount("tmpfs", target, "tmpfs", 0, "size=1m");
        host.closeLater(FileChannel.open(target.resolve("open"), StandardOpenOption.CREATE_NEW,
                StandardOpenOption.WRITE));

        NativeIOException e = assertThrows(NativeIOException.class,
                () -> LinuxNative.umount2(target.toString(), 0));

        assertEquals("umount2", e.syscall());
        assertEquals(target.toString(), e.path());
        assertEquals(16, e.errno());
        assertEquals("EBUSY", e.errnoName());
        assertEquals("umount2(" + target + "): EBUSY (Device or resource busy)", e.getMessage());
    }

    @Test
    void mountingTheSameFileSystemOntoItsOwnMountPointAgainIsEbusy() throws Exception {
        LoopDevice loop = host.loop("ext4.img", SIZE, false);
        Commands.run("mkfs.ext4", "-q", "-F", loop.device);
        Path target = host.dir("ext4");
        host.mount(loop.device, target, "ext4", 0, null);

        NativeIOException e = assertThrows(NativeIOException.class,
                () -> LinuxNative.mount(loop.device, target.toString(), "ext4", 0, null));

        assertEquals("mount", e.syscall());
        assertEquals(loop.device + " -> " + target, e.path());
        assertEquals("EBUSY", e.errnoName());
        assertEquals("mount(" + loop.device + " -> " + target + "): EBUSY (Device or resource busy)",
                e.getMessage());
    }

    @Test
    void anUnknownFileSystemTypeIsEnodev() throws Exception {
        String target = host.dir("target").toString();

        NativeIOException e = assertThrows(NativeIOException.class,
                () -> LinuxNative.mount("none", target, "blocknodenosuchfs", 0, null));

        assertEquals("ENODEV", e.errnoName());
        assertEquals(19, e.errno());
        assertEquals("none -> " + target, e.path());
    }

    @Test
    void aDeviceNodeWithoutADriverIsEnxio() throws Exception {
        Path node = host.root.resolve("no-driver");
        Commands.run("mknod", node.toString(), "b", Integer.toString(unusedBlockMajor()), "0");

        NativeIOException e = assertThrows(NativeIOException.class,
                () -> LinuxNative.blockDeviceSize(node.toString()));

        assertEquals("open", e.syscall());
        assertEquals("ENXIO", e.errnoName());
        assertEquals(6, e.errno());
    }

    @Test
    void mountingAReadOnlyDeviceReadWriteIsEacces() throws Exception {
        Path image = host.root.resolve("ext4.img");
        LoopDevice writable = host.loop("ext4.img", SIZE, false);
        Commands.run("mkfs.ext4", "-q", "-F", writable.device);
        writable.close();
        LoopDevice readOnly = host.loop(image.getFileName().toString(), SIZE, true);
        String target = host.dir("ext4").toString();

        NativeIOException e = assertThrows(NativeIOException.class,
                () -> LinuxNative.mount(readOnly.device, target, "ext4", 0, null));

        assertEquals("EACCES", e.errnoName());
        assertEquals(13, e.errno());
    }

    @Test
    void withoutCapSysAdminUmount2IsEperm() throws Exception {
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/setpriv")), "needs setpriv (util-linux)");
        String dir = host.dir("plain").toString();
        List<String> jvmArgs = new ArrayList<>();
        String library = System.getProperty(NativeLibrary.LIBRARY_PROPERTY);
        if (library != null) {
            jvmArgs.add("-D" + NativeLibrary.LIBRARY_PROPERTY + "=" + library);
        }

        ForkedJvm.Outcome outcome = ForkedJvm.probe(List.of("/usr/bin/setpriv", "--bounding-set=-sys_admin"),
                jvmArgs, "umount2", dir);

        assertEquals(0, outcome.exitCode(), outcome.output());
        assertEquals("NativeIOException", outcome.get("result"));
        assertEquals("umount2", outcome.get("syscall"));
        assertEquals(dir, outcome.get("path"));
        assertEquals("EPERM", outcome.get("errnoName"));
        assertEquals("1", outcome.get("errno"));
        assertEquals("umount2(" + dir + "): EPERM (Operation not permitted)", outcome.get("message"));
    }

    @Test
    void anExt4JournalThatNeedsRecoveryOnAReadOnlyDeviceIsErofs() throws Exception {
        Path xfsIo = Path.of("/usr/sbin/xfs_io");
        assumeTrue(Files.isExecutable(xfsIo), "needs xfs_io (xfsprogs)");
        Path image = host.root.resolve("ext4.img");
        LoopDevice writable = host.loop("ext4.img", SIZE, false);
        Commands.run("mkfs.ext4", "-q", "-F", writable.device);
        Path target = host.dir("ext4");
        host.mount(writable.device, target, "ext4", 0, null);
        Files.writeString(target.resolve("file"), "data");
        // Shut the file system down: the unmount cannot mark the journal clean.
        Commands.run(xfsIo.toString(), "-x", "-c", "shutdown", target.toString());
        LinuxNative.umount2(target.toString(), 0);
        host.unmounted(target);
        writable.close();
        LoopDevice readOnly = host.loop(image.getFileName().toString(), SIZE, true);

        NativeIOException e = assertThrows(NativeIOException.class,
                () -> LinuxNative.mount(readOnly.device, target.toString(), "ext4", MS_RDONLY, null));

        assertEquals("EROFS", e.errnoName());
        assertEquals(30, e.errno());
        assertEquals(readOnly.device + " -> " + target, e.path());
    }

    /** A block major number in the local/experimental range that no driver has registered. */
    private static int unusedBlockMajor() throws Exception {
        Set<Integer> used = new TreeSet<>();
        boolean block = false;
        for (String line : Files.readAllLines(Path.of("/proc/devices"))) {
            if (line.startsWith("Block devices:")) {
                block = true;
            } else if (block && !line.isBlank()) {
                used.add(Integer.parseInt(line.strip().split("\\s+")[0]));
            }
        }
        for (int major = 240; major <= 254; major++) {
            if (!used.contains(major)) {
                return major;
            }
        }
        throw new IllegalStateException("no free block major in 240..254: " + used);
    }
}
