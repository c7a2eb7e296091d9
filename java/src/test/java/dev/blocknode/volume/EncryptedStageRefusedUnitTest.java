package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static dev.blocknode.volume.LifecycleFixture.block;
import static dev.blocknode.volume.LifecycleFixture.filesystem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A volume that asks for encryption is never staged in the clear: until the stage opens LUKS2 devices, it is refused
 * before anything is attached or recorded, for a filesystem and for raw block alike.
 */
class EncryptedStageRefusedUnitTest {

    private static final String VOLUME = "vol-encrypted";

    @TempDir
    Path temp;

    private LifecycleFixture node;

    @BeforeEach
    void wire() throws IOException {
        node = new LifecycleFixture(temp);
    }

    @AfterEach
    void clean() {
        node.assertClean();
    }

    @ParameterizedTest
    @ValueSource(strings = {"luks2", "LUKS2", "luks1", "yes"})
    void encryptionIsRefusedBeforeAnythingIsAttached(String value) throws Exception {
        for (VolumeCapability capability : List.of(filesystem(), block())) {
            VolumeException refused = assertThrows(VolumeException.class, () -> node.volumes.stage(
                    node.stageRequest(VOLUME, node.device, capability, Map.of("encryption", value))));
            assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, refused.outcome());
            assertTrue(refused.getMessage().contains("volume_context.encryption"), refused.getMessage());
        }
        assertTrue(node.transport.calls().isEmpty(), "attached: " + node.transport.calls());
        assertTrue(node.record(VOLUME).isEmpty(), "a record was written");
        assertTrue(node.machine.actions().isEmpty(), "the host was changed: " + node.machine.actions());
    }

    @ParameterizedTest
    @ValueSource(strings = {"none", "NONE", " "})
    void noneOrBlankStagesAsBefore(String value) throws Exception {
        node.expectProbe(node.device).returns(0, "TYPE=ext4\nUSAGE=filesystem\n", "");
        node.expectPreen(node.device).returns(0, "", "");
        node.volumes.stage(node.stageRequest(VOLUME, node.device, filesystem(), Map.of("encryption", value)));
        assertEquals(1, node.machine.actions().size(), "mounted: " + node.machine.actions());
    }
}
