package dev.blocknode.volume.encryption;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The mapping's name: stable per volume, safe and short whatever the volume id holds. */
class CryptMappingNameUnitTest {

    @Test
    void stableSafeAndBounded() {
        for (String id : new String[]{"vol-1", "../../dev/sda --key-file=/etc/shadow", "x".repeat(4096), "é\n\0"}) {
            String name = CryptMappingName.of(id);
            assertEquals(name, CryptMappingName.of(id));
            assertTrue(name.matches("blocknode-[0-9a-f]{32}"), name);
        }
        assertNotEquals(CryptMappingName.of("vol-1"), CryptMappingName.of("vol-2"));
        assertEquals("blocknode-bb73dcd2d2ddcf8a4d7cd9ca5a8bbb44".length(), CryptMappingName.of("vol-1").length());
    }
}
