package dev.blocknode.scsi;

import dev.blocknode.os.natives.PermissionDeniedException;
import dev.blocknode.testing.ScriptedUevents;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

class DeviceWaitingUnitTest {

    @Test
    void pollModeNeverOpensTheEventSource() throws Exception {
        try (DeviceWaiting waiting = DeviceWaiting.start(DeviceWaiting.Mode.POLL, Optional.of(Duration.ofMillis(5)),
                () -> fail("opened the uevent socket in poll mode"))) {
            assertFalse(waiting.eventDriven());
            int[] looks = {0};
            assertEquals("sdb", waiting.waiter().within(Duration.ofSeconds(30), "sdb",
                    () -> ++looks[0] == 3 ? Optional.of("sdb") : Optional.empty()));
        }
    }

    @Test
    void withoutTheSocketItPolls() throws Exception {
        try (DeviceWaiting waiting = DeviceWaiting.start(DeviceWaiting.Mode.EVENTS, Optional.of(Duration.ofMillis(5)),
                () -> {
                    throw new PermissionDeniedException("socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT)", null, 13,
                            "EACCES", "Permission denied");
                })) {
            assertFalse(waiting.eventDriven());
            int[] looks = {0};
            assertEquals("sdb", waiting.waiter().within(Duration.ofSeconds(30), "sdb",
                    () -> ++looks[0] == 3 ? Optional.of("sdb") : Optional.empty()));
            assertEquals(3, looks[0]);
        }
    }

    @Test
    void eventsModeListensAndClosesTheSource() {
        ScriptedUevents source = new ScriptedUevents();
        DeviceWaiting waiting = DeviceWaiting.start(DeviceWaiting.Mode.EVENTS, Optional.empty(), () -> source);
        assertTrue(waiting.eventDriven());
        waiting.close();
        assertFalse(waiting.eventDriven());
        assertTrue(source.closed());
    }
}
