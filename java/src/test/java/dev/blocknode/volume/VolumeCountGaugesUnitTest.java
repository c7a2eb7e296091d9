package dev.blocknode.volume;

import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.ScriptedTransport;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** blocknode_volumes{phase}: the staging records counted by phase at each refresh, every phase there at 0. */
class VolumeCountGaugesUnitTest {

    @TempDir
    Path temp;

    @Test
    void theRecordsAreCountedByPhaseAtEachRefresh() throws Exception {
        LifecycleFixture node = new LifecycleFixture(temp);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        VolumeCountGauges gauges = new VolumeCountGauges(node.store, node.volumes, registry);
        gauges.refresh();
        assertEquals(Map.of("attaching", 0.0, "staging", 0.0, "staged", 0.0, "unstaging", 0.0), byPhase(registry));

        save(node, "a", StagePhase.STAGED);
        save(node, "b", StagePhase.STAGED);
        save(node, "c", StagePhase.ATTACHING);
        save(node, "d", StagePhase.UNSTAGING);
        assertEquals(0.0, byPhase(registry).get("staged"), "nothing changes between refreshes");
        gauges.refresh();
        assertEquals(Map.of("attaching", 1.0, "staging", 0.0, "staged", 2.0, "unstaging", 1.0), byPhase(registry));

        node.store.delete("b");
        save(node, "c", StagePhase.STAGING);
        gauges.refresh();
        assertEquals(Map.of("attaching", 0.0, "staging", 1.0, "staged", 1.0, "unstaging", 1.0), byPhase(registry));
    }

    private static void save(LifecycleFixture node, String volumeId, StagePhase phase) throws Exception {
        node.store.save(StagingRecord.newBuilder().setVolumeId(volumeId).setPhase(phase)
                .setTransport(ScriptedTransport.NAME).build());
    }

    private static Map<String, Double> byPhase(SimpleMeterRegistry registry) {
        Map<String, Double> counts = new HashMap<>();
        registry.find(VolumeCountGauges.VOLUMES).gauges().forEach(g -> counts.put(g.getId().getTag("phase"),
                g.value()));
        return counts;
    }
}
