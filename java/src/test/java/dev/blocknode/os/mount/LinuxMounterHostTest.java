package dev.blocknode.os.mount;

import dev.blocknode.os.Errno;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.SyscallException;
import dev.blocknode.os.natives.LinuxNative;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A busy mount is unmounted once whatever held it lets go, within the bounded retries; never forced. */
@Tag("host")
class LinuxMounterHostTest {

    @TempDir
    Path dir;

    private Path mountPoint;

    private Path tmpfs() throws IOException {
        mountPoint = Files.createDirectories(dir.resolve("mnt"));
        LinuxNative.mount("tmpfs", mountPoint.toString(), "tmpfs", 0, "size=1m");
        return mountPoint;
    }

    @AfterEach
    void unmountWhatIsLeft() throws IOException {
        if (mountPoint != null && LinuxNative.isMountPoint(mountPoint.toString())) {
            LinuxNative.umount2(mountPoint.toString(), 0);
        }
    }

    @Test
    void aMountBusyForAMomentIsUnmountedOnALaterAttempt() throws Exception {
        Path mnt = tmpfs();
        DirectoryStream<Path> holder = Files.newDirectoryStream(mnt); // an open descriptor: EBUSY
        List<Integer> pauses = new ArrayList<>();
        LinuxMounter mounter = new LinuxMounter(HostPaths.real(), attempt -> {
            pauses.add(attempt);
            if (attempt == 3) {
                try {
                    holder.close(); // the holder lets go after the second busy answer
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            }
        });

        assertTrue(mounter.unmount(mnt));

        assertEquals(List.of(2, 3), pauses, "two busy answers, then the third attempt unmounted");
        assertFalse(LinuxNative.isMountPoint(mnt.toString()));
    }

    @Test
    void aMountThatStaysBusyIsReportedBusyAfterTheLastAttemptAndLeftMounted() throws Exception {
        Path mnt = tmpfs();
        List<Integer> pauses = new ArrayList<>();
        LinuxMounter mounter = new LinuxMounter(HostPaths.real(), pauses::add);
        try (DirectoryStream<Path> holder = Files.newDirectoryStream(mnt)) {
            SyscallException busy = assertThrows(SyscallException.class, () -> mounter.unmount(mnt));
            assertEquals(Errno.EBUSY, busy.errno());
            assertTrue(busy.getMessage().contains(mnt.toString()), busy.getMessage());
        }
        assertEquals(LinuxMounter.BUSY_ATTEMPTS - 1, pauses.size());
        assertTrue(LinuxNative.isMountPoint(mnt.toString()), "never forced or detached lazily");
    }
}
