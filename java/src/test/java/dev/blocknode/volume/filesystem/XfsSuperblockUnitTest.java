package dev.blocknode.volume.filesystem;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The UUID where xfs keeps it: byte 32 of a superblock that starts with XFSB; nothing for anything else. */
class XfsSuperblockUnitTest {

    @Test
    void readsTheUuidOfAnXfsSuperblockOnly() {
        UUID uuid = UUID.fromString("0b5e1f8a-3c2d-4e6f-8a9b-0c1d2e3f4a5b");
        ByteBuffer sb = ByteBuffer.allocate(512);
        sb.putInt(0, 0x58465342).putLong(32, uuid.getMostSignificantBits()).putLong(40, uuid.getLeastSignificantBits());
        assertEquals(Optional.of(uuid), XfsSuperblock.uuidIn(sb.array()));
        sb.putInt(0, 0);
        assertEquals(Optional.empty(), XfsSuperblock.uuidIn(sb.array()), "no magic: not xfs");
        assertEquals(Optional.empty(), XfsSuperblock.uuidIn(new byte[40]), "too short");
    }
}
