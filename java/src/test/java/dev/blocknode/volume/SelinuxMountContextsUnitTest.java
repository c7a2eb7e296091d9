package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.volume.request.AccessMode;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.VolumeCapability;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import static dev.blocknode.volume.LifecycleFixture.VOLUME;
import static dev.blocknode.volume.LifecycleFixture.filesystem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * kubelet's SELinux mount contexts over the fake machine: the staging mount takes the context, the record keeps
 * it (across a restart too), a stage with another context is ALREADY_EXISTS naming both and changes nothing, a
 * publication with the staged context or none is bound, one with another context is FAILED_PRECONDITION with
 * nothing made at its target.
 */
class SelinuxMountContextsUnitTest {

    private static final String POD_A = "system_u:object_r:container_file_t:s0:c1,c2";
    private static final String POD_B = "system_u:object_r:container_file_t:s0:c3,c4";

    @TempDir
    Path temp;

    private LifecycleFixture node;

    @BeforeEach
    void setUp() throws IOException {
        node = new LifecycleFixture(temp);
    }

    @AfterEach
    void clean() {
        node.assertClean();
    }

    private static VolumeCapability labelled(String context) {
        return filesystem(AccessMode.SINGLE_NODE_WRITER, "context=\"" + context + "\"");
    }

    private void stagedWith(String context) throws VolumeException {
        node.expectBlankFormatted(node.device);
        node.stage(VOLUME, node.device, labelled(context));
        node.machine.clearActions();
    }

    @Test
    void theStagingMountTakesTheContextAndTheRecordKeepsIt() throws Exception {
        stagedWith(POD_A);

        assertEquals("rw,context=\"" + POD_A + "\"", node.machine.mountFlags(node.staging(VOLUME)).orElseThrow());
        assertEquals(POD_A, SelinuxMountContexts.stagedContext(node.record(VOLUME).orElseThrow()).orElseThrow()
                .toString());
    }

    @Test
    void theSameContextAgainIsOkBeforeAndAfterARestart() throws Exception {
        stagedWith(POD_A);

        node.stage(VOLUME, node.device, labelled(POD_A));
        node.restarted().stage(node.stageRequest(VOLUME, node.device, labelled(POD_A)));

        assertEquals(List.of(), node.machine.actions());
        assertEquals(StagePhase.STAGED, node.phase(VOLUME));
    }

    @Test
    void anotherContextForTheStagedVolumeIsAlreadyExistsNamingBothAndChangesNothing() throws Exception {
        stagedWith(POD_A);
        byte[] recorded = node.record(VOLUME).orElseThrow().toByteArray();

        for (NodeVolumes volumes : List.of(node.volumes, node.restarted())) {
            VolumeException refused = assertThrows(VolumeException.class,
                    () -> volumes.stage(node.stageRequest(VOLUME, node.device, labelled(POD_B))));

            assertEquals(VolumeException.Outcome.ALREADY_EXISTS, refused.outcome());
            assertTrue(refused.getMessage().contains("SELinux context " + POD_A), refused.getMessage());
            assertTrue(refused.getMessage().contains("asks for SELinux context " + POD_B), refused.getMessage());
        }
        assertEquals(List.of(), node.machine.actions());
        assertTrue(java.util.Arrays.equals(recorded, node.record(VOLUME).orElseThrow().toByteArray()));
    }

    @Test
    void aContextForAVolumeStagedWithoutOneIsAlreadyExists() throws Exception {
        node.staged(VOLUME, node.device);
        node.machine.clearActions();

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.stage(VOLUME, node.device, labelled(POD_A)));

        assertEquals(VolumeException.Outcome.ALREADY_EXISTS, refused.outcome());
        assertTrue(refused.getMessage().contains("with no SELinux context"), refused.getMessage());
        assertEquals(List.of(), node.machine.actions());
    }

    @Test
    void aPublicationWithTheStagedContextOrNoneIsBound() throws Exception {
        stagedWith(POD_A);
        Path labelledTarget = node.target("pod-a", VOLUME);
        Path plainTarget = node.target("pod-b", VOLUME);

        node.publish(VOLUME, labelledTarget, labelled(POD_A), false);
        node.publish(VOLUME, plainTarget, filesystem(), false);

        assertEquals(List.of("bind " + node.staging(VOLUME) + " -> " + labelledTarget,
                "bind " + node.staging(VOLUME) + " -> " + plainTarget), node.machine.actions());
    }

    @Test
    void aPublicationWithAnotherContextIsRefusedWithNothingMadeAtItsTarget() throws Exception {
        stagedWith(POD_A);
        Path target = node.target("pod-b", VOLUME);

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.publish(VOLUME, target, labelled(POD_B), false));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(refused.getMessage().contains("staged with SELinux context " + POD_A
                + ", the publication asks for SELinux context " + POD_B), refused.getMessage());
        assertEquals(List.of(), node.machine.actions());
        assertFalse(node.machine.exists(target));
        assertTrue(node.record(VOLUME).orElseThrow().getPublicationsMap().isEmpty());
    }

    @Test
    void contextsAreComparedAsContextsNotAsTheFlagsSpelling() throws Exception {
        String level = "system_u:object_r:container_file_t:s0";
        node.expectBlankFormatted(node.device);
        node.stage(VOLUME, node.device, labelled(level));
        node.machine.clearActions();
        Path target = node.target("pod-a", VOLUME);

        node.publish(VOLUME, target, filesystem(AccessMode.SINGLE_NODE_WRITER, "nodev,context=" + level), false);

        assertEquals(List.of("bind " + node.staging(VOLUME) + " -> " + target + " (rw,0x4)"), node.machine.actions(),
                "a context without a comma may come bare; the bind carries only the per-mount flag");
    }

    @Test
    void anEinvalOfALabelledMountSaysWhatTheKernelNeedsForIt() {
        assertTrue(SelinuxMountContexts.einvalHint(AccessType.Mount.parsed("ext4",
                List.of("context=\"" + POD_A + "\"")).options()).contains("SELinux running on the node"));
        assertEquals("", SelinuxMountContexts.einvalHint(AccessType.Mount.parsed("ext4",
                List.of("journal_async_commit")).options()));
    }

    @Test
    void aPublicationWithAContextOfAVolumeStagedWithoutOneIsRefused() throws Exception {
        node.staged(VOLUME, node.device);
        node.machine.clearActions();

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.publish(VOLUME, node.target("pod-a", VOLUME), labelled(POD_A), false));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(refused.getMessage().contains("staged with no SELinux context"), refused.getMessage());
        assertEquals(List.of(), node.machine.actions());
    }
}
