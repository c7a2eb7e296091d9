package dev.blocknode.os.uevent;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;

class UeventUnitTest {

    private static byte[] message(String text) {
        return text.replace('|', '\0').getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aKernelMessage() {
        Uevent event = Uevent.parse(message("add@/devices/platform/host2/session1/target2:0:0/2:0:0:1/block/sdc|"
                + "ACTION=add|DEVPATH=/devices/platform/host2/session1/target2:0:0/2:0:0:1/block/sdc|SUBSYSTEM=block|"
                + "MAJOR=8|MINOR=32|DEVNAME=sdc|DEVTYPE=disk|DISKSEQ=7|SEQNUM=2214|")).orElseThrow();
        assertEquals("add", event.action());
        assertEquals("/devices/platform/host2/session1/target2:0:0/2:0:0:1/block/sdc", event.devpath());
        assertEquals("block", event.subsystem());
        assertEquals(Optional.of("sdc"), event.deviceName());
        assertEquals("32", event.properties().get("MINOR"));
        assertEquals("2214", event.properties().get("SEQNUM"));
    }

    @Test
    void theLastStringNeedNotEndWithANul() {
        assertEquals("change", Uevent.parse(message("change@/devices/virtual/block/dm-0|ACTION=change|"
                + "DEVPATH=/devices/virtual/block/dm-0|SUBSYSTEM=block")).orElseThrow().action());
    }

    @Test
    void aValueMayContainEqualsAndTheFirstOfARepeatedKeyCounts() {
        Uevent event = Uevent.parse(message("change@/d|ACTION=change|DEVPATH=/d|SUBSYSTEM=block|DM_NAME=a=b|"
                + "SUBSYSTEM=net")).orElseThrow();
        assertEquals("a=b", event.properties().get("DM_NAME"));
        assertEquals("block", event.subsystem());
        assertEquals(Optional.empty(), event.deviceName());
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "",
            "|",
            "add@/d",
            "libudev|ACTION=add|DEVPATH=/d|SUBSYSTEM=block",
            "@/d|ACTION=add|DEVPATH=/d|SUBSYSTEM=block",
            "add@|ACTION=add|DEVPATH=|SUBSYSTEM=block",
            "add@/d|DEVPATH=/d|SUBSYSTEM=block",
            "add@/d|ACTION=add|SUBSYSTEM=block",
            "add@/d|ACTION=add|DEVPATH=/d",
            "add@/d|ACTION=remove|DEVPATH=/d|SUBSYSTEM=block",
            "add@/d|ACTION=add|DEVPATH=/e|SUBSYSTEM=block",
            "=|==|ACTION|=add",
    })
    void malformedMessagesAreNoEvents(String text) {
        assertEquals(Optional.empty(), Uevent.parse(message(text)));
    }

    @Test
    void invalidUtf8IsNoCrash() {
        byte[] bytes = {'a', 'd', 'd', '@', '/', (byte) 0xff, 0, (byte) 0xc3};
        assertEquals(Optional.empty(), Uevent.parse(bytes));
    }
}
