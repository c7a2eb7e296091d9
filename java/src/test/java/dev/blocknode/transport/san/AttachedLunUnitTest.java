package dev.blocknode.transport.san;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.Wwid;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AttachedLunUnitTest {

    private static final Path DEVICE = Path.of("/dev/dm-0");
    private static final DeviceNumber NUMBER = new DeviceNumber(253, 0);

    @Test
    void detailsRoundTrip() {
        AttachedLun lun = new AttachedLun(Wwid.parse("36001405abcdef"),
                List.of(new AttachedLun.LunPath(new ScsiAddress(1, 0, 0, 3), "sdb"),
                        new AttachedLun.LunPath(new ScsiAddress(2, 0, 1, 3), "sdc")),
                Optional.of("mpatha"), DEVICE, NUMBER, List.of(new ScsiAddress(3, 0, 2, 3)));
        Map<String, String> details = lun.details();
        assertEquals(Map.of("wwid", "36001405abcdef", "paths", "1:0:0:3=sdb,2:0:1:3=sdc", "multipathMap", "mpatha",
                "missingPaths", "3:0:2:3"), details);
        assertEquals(lun, AttachedLun.fromDetails(details, DEVICE, NUMBER));
    }

    @Test
    void aSinglePathWithoutMapHasNoMapKey() {
        AttachedLun lun = new AttachedLun(Wwid.parse("naa.6001"), List.of(new AttachedLun.LunPath(
                new ScsiAddress(1, 0, 0, 3), "sdb")), Optional.empty(), Path.of("/dev/sdb"), new DeviceNumber(8, 16),
                List.of());
        assertEquals(Map.of("wwid", "36001", "paths", "1:0:0:3=sdb"), lun.details());
        assertEquals(lun, AttachedLun.fromDetails(lun.details(), Path.of("/dev/sdb"), new DeviceNumber(8, 16)));
    }

    @Test
    void malformedDetailsAreRefusedNamingTheKey() {
        Map<String, String> noWwid = Map.of("paths", "1:0:0:3=sdb");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> AttachedLun.fromDetails(noWwid, DEVICE, NUMBER))
                .getMessage().contains("\"wwid\""));
        Map<String, String> badPath = new LinkedHashMap<>(Map.of("wwid", "36001", "paths", "1:0:0:3"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> AttachedLun.fromDetails(badPath, DEVICE, NUMBER))
                .getMessage().contains("\"paths\""));
        Map<String, String> climbing = Map.of("wwid", "36001", "paths", "1:0:0:3=../../etc");
        assertThrows(IllegalArgumentException.class, () -> AttachedLun.fromDetails(climbing, DEVICE, NUMBER));
    }
}
