package dev.blocknode.volume;

import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;

import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * How many volumes this node holds, for a dashboard: {@code blocknode_volumes{phase}} from the staging records
 * (staged, and those caught mid-call: attaching, staging, unstaging), and {@code blocknode_fenced_volumes{state}}
 * from the fencing renewals (held, unreachable, fenced_out). Every label value is exported from the start, at 0,
 * so that a sum or an alert over them sees the first volume arrive. The phases are counted right before each
 * scrape ({@link #refresh}): the records are in memory, so nothing here waits for a CSI call.
 */
public final class VolumeCountGauges {

    public static final String VOLUMES = "blocknode_volumes";
    public static final String FENCED = "blocknode_fenced_volumes";
    /** The phases a record is saved in; UNSPECIFIED never is. */
    private static final List<StagePhase> PHASES = List.of(StagePhase.ATTACHING, StagePhase.STAGING,
            StagePhase.STAGED, StagePhase.UNSTAGING);

    private final RecordStore store;
    private final Map<StagePhase, AtomicLong> byPhase = new EnumMap<>(StagePhase.class);

    public VolumeCountGauges(RecordStore store, NodeVolumes volumes, MeterRegistry registry) {
        this.store = store;
        for (StagePhase phase : PHASES) {
            AtomicLong count = new AtomicLong();
            byPhase.put(phase, count);
            Gauge.builder(VOLUMES, count, AtomicLong::get)
                    .description("volumes staged on this node or in a staging call, by the phase of their staging"
                            + " record (attaching, staging, staged, unstaging)")
                    .tag("phase", phase.name().toLowerCase(Locale.ROOT))
                    .register(registry);
        }
        VolumeFences fences = volumes.fences();
        for (VolumeFences.State state : VolumeFences.State.values()) {
            Gauge.builder(FENCED, fences, f -> f.count(state))
                    .description("staged volumes fenced at the storage, by what their last reservation renewal"
                            + " found: held, unreachable (the LUN or namespace did not answer), fenced_out (another"
                            + " node took it: this node's writes fail)")
                    .tag("state", state.label)
                    .register(registry);
        }
    }

    /** Counts the records by phase; records in a phase not listed (none today) are not counted. */
    public void refresh() {
        Map<StagePhase, Long> counts = new EnumMap<>(StagePhase.class);
        for (StagingRecord record : store.all()) {
            counts.merge(record.getPhase(), 1L, Long::sum);
        }
        byPhase.forEach((phase, gauge) -> gauge.set(counts.getOrDefault(phase, 0L)));
    }
}
