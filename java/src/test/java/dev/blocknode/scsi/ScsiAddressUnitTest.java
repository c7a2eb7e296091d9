package dev.blocknode.scsi;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class ScsiAddressUnitTest {

    @Test
    void parsesAndPrintsHctl() {
        ScsiAddress address = ScsiAddress.parse("3:0:12:16384\n");
        assertEquals(new ScsiAddress(3, 0, 12, 16384), address);
        assertEquals("3:0:12:16384", address.toString());
        assertEquals(address, ScsiAddress.parse(address.toString()));
        assertEquals(new ScsiAddress(3, 0, 12, 7), address.withLun(7));
    }

    @Test
    void aLunMayExceedAnInt() {
        assertEquals(4294967296L, ScsiAddress.parse("0:0:0:4294967296").lun());
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "1:2:3", "1:2:3:4:5", "a:0:0:0", "1:0:0:-1", "-1:0:0:0", "1::0:0", "host1:0:0:0"})
    void refusesWhatIsNotAnAddress(String text) {
        assertThrows(IllegalArgumentException.class, () -> ScsiAddress.parse(text));
    }

    @Test
    void deviceStatesParseTheSysfsSpelling() {
        assertEquals(ScsiDeviceState.RUNNING, ScsiDeviceState.parse("running\n"));
        assertEquals(ScsiDeviceState.TRANSPORT_OFFLINE, ScsiDeviceState.parse("transport-offline"));
        assertEquals(ScsiDeviceState.BLOCKED, ScsiDeviceState.parse("blocked"));
        assertEquals(ScsiDeviceState.OFFLINE, ScsiDeviceState.parse("offline"));
        assertEquals(ScsiDeviceState.CREATED_BLOCKED, ScsiDeviceState.parse("created-blocked"));
        assertEquals(ScsiDeviceState.UNKNOWN, ScsiDeviceState.parse("sleepy"));
        assertEquals(ScsiDeviceState.UNKNOWN, ScsiDeviceState.parse("gone"));
        assertEquals("transport-offline", ScsiDeviceState.TRANSPORT_OFFLINE.sysfsName());
    }
}
