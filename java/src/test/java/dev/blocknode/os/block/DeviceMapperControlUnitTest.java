package dev.blocknode.os.block;

import dev.blocknode.os.HostPaths;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The ioctls load and fail cleanly where they cannot be used, through the host path seam (the host kernel of the
 * tests has no device-mapper; the VM tier removes real maps through them).
 */
class DeviceMapperControlUnitTest {

    @TempDir
    Path dev;

    private DeviceMapperControl control() {
        return new DeviceMapperControl(new HostPaths(dev.resolve("sys"), dev, dev.resolve("proc"), dev.resolve("etc")));
    }

    @Test
    void withoutAControlNodeEveryCallIsUnavailable() {
        everyCallIsUnavailable("open", "ENOENT");
    }

    @Test
    void aControlNodeThatIsNoDeviceMapperIsUnavailable() throws IOException {
        Files.createDirectories(dev.resolve("mapper"));
        Files.writeString(dev.resolve("mapper/control"), "");
        everyCallIsUnavailable("ioctl(DM_DEV_REMOVE)", "ENOTTY");
    }

    /** Each of the three calls is unavailable; the remove's message names the control node, the call and errno. */
    private void everyCallIsUnavailable(String call, String errno) {
        DeviceMapperControl control = control();
        DeviceMapper.UnavailableException e = assertThrows(DeviceMapper.UnavailableException.class,
                () -> control.remove("mpatha"));
        String message = e.getMessage();
        assertTrue(message.contains("mapper/control") && message.contains(call) && message.contains(errno), message);
        assertThrows(DeviceMapper.UnavailableException.class, () -> control.message("mpatha", "fail_if_no_path"));
        assertThrows(DeviceMapper.UnavailableException.class, () -> control.openCount("mpatha"));
    }

    @Test
    void aNameTooLongForTheKernelIsRefusedBeforeAnyCall() {
        DeviceMapperControl control = control();
        DeviceMapper.UnavailableException e = assertThrows(DeviceMapper.UnavailableException.class,
                () -> control.remove("m".repeat(200)));
        assertTrue(e.getMessage().contains("EINVAL"), e.getMessage());
    }
}
