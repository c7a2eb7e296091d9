package dev.blocknode.volume.read;

import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.PathReport;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.record.StagingRecords;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * {@code blocknode_volume_paths{volume_id, state="serving"|"failed"}} for every staged SAN volume: the
 * path count an operator watches to see a volume running on one leg before it loses the last. The set of
 * volumes changes as volumes come and go, so the rows are rebuilt from the staging records and sysfs right
 * before each scrape ({@link #refresh}), which reads sysfs only.
 */
public final class VolumePathGauges {

    private static final Logger LOG = Logger.getLogger(VolumePathGauges.class.getName());

    private final Transports transports;
    private final RecordStore store;
    private final MultiGauge gauge;

    public VolumePathGauges(Transports transports, RecordStore store, MeterRegistry registry) {
        this.transports = transports;
        this.store = store;
        this.gauge = MultiGauge.builder("blocknode_volume_paths")
                .description("paths of each staged SAN volume, by state: serving I/O, or failed (not running, "
                        + "dropped from the multipath map, or the map gone)")
                .register(registry);
    }

    /** Rebuilds the rows; on an unreadable state directory, logs and keeps the previous rows. */
    public void refresh() {
        List<MultiGauge.Row<?>> rows = new ArrayList<>();
        try {
            for (StagingRecord record : store.all()) {
                Optional<PathReport> report = StagingRecords.pathHealth(transports, record);
                if (report.isPresent()) {
                    Tags volume = Tags.of("volume_id", record.getVolumeId());
                    rows.add(MultiGauge.Row.of(volume.and("state", "serving"), report.get().serving()));
                    rows.add(MultiGauge.Row.of(volume.and("state", "failed"), report.get().failed()));
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, "cannot refresh the volume path gauges; keeping the previous values", e);
            return;
        }
        gauge.register(rows, true);
    }
}
