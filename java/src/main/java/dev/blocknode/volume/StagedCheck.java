package dev.blocknode.volume;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.DeviceIdentity;
import dev.blocknode.transport.Transport;
import dev.blocknode.volume.record.RecordedBoot;
import dev.blocknode.volume.record.StagingRecords;

import java.util.Optional;
import java.util.logging.Logger;

/**
 * Whether a stage finds its volume staged already: an earlier attempt's record with a device binds this one (same
 * staging path, same device, a compatible capability: else a refusal), and the volume counts as staged only when
 * that attempt finished and what it staged is still in place.
 */
final class StagedCheck {

    // The stage's lines keep the logger operators know them by (docs/reference/log-format.md).
    private static final Logger LOG = Logger.getLogger(VolumeStager.class.getName());

    private final NodeParts node;
    private final StagingMounts mounts;

    StagedCheck(NodeParts node, StagingMounts mounts) {
        this.node = node;
        this.mounts = mounts;
    }

    /**
     * True when the earlier attempt finished and its volume is still in place. An ATTACHING record (a crash inside
     * the attach) holds no device and promised nothing: the retry replaces it.
     */
    boolean isStagedAlready(StagePlan plan, Optional<StagingRecord> existing) throws VolumeException {
        Optional<StagingRecord> deviceRecorded = existing.filter(r -> r.getPhase() != StagePhase.ATTACHING);
        if (deviceRecorded.isEmpty()) {
            return false;
        }
        StagingRecord record = deviceRecorded.get();
        if (!record.getStagingPath().equals(plan.staging().toString())) {
            throw VolumeException.alreadyExists("volume " + record.getVolumeId() + " is already staged at "
                    + record.getStagingPath() + ", not at " + plan.staging());
        }
        StageRetryRules.requireSameDevice(record, plan.transport(), plan.attachRequest());
        StageRetryRules.requireCompatible(record, plan.capability(), plan.requestedFs(),
                capabilityBinds(record, plan));
        return record.getPhase() == StagePhase.STAGED && stillStaged(record, plan);
    }

    /** Whether the record's capability binds a retry (see {@link StageRetryRules#requireCompatible}). */
    private boolean capabilityBinds(StagingRecord record, StagePlan plan) throws VolumeException {
        return record.getPhase() == StagePhase.STAGED
                || (record.hasMount() && mounts.holdsMountOf(plan.staging(), StagingRecords.usedNumber(record)));
    }

    /**
     * True when what the record says is staged is really in place (after a restart or a reboot, it may not be).
     * A record of an earlier boot never is: its numbers name nothing of the volume's (a device the transport does
     * not know, an LVM volume or a mapping, would prove nothing either way); it is staged again, idempotently, as
     * kubelet's stage after a reboot expects, and the record rewritten with this boot's id. A record written
     * before records carried a boot id (an upgrade, which rarely comes with a reboot) is judged as before, by
     * its device and mount, and stamped with this boot's id when it passes: staging every volume of an upgraded
     * node again would refuse a raw block volume whose pod holds its device exclusively.
     */
    private boolean stillStaged(StagingRecord record, StagePlan plan) throws VolumeException {
        StagingRecords records = node.records();
        RecordedBoot boot = records.bootOf(record);
        if (boot == RecordedBoot.EARLIER_BOOT) {
            LOG.info(() -> "volume " + record.getVolumeId() + " is recorded as staged in an earlier boot:"
                    + " staging it again");
            return false;
        }
        DeviceNumber number = StagingRecords.usedNumber(record);
        if (!node.host().blockDevices().exists(number) || numberNowNamesAnotherDevice(record, plan.transport())) {
            return false;
        }
        boolean inPlace = record.hasBlock() || mounts.holdsMountOf(plan.staging(), number);
        if (inPlace && boot == RecordedBoot.UNKNOWN) {
            records.save(records.stampBoot(record.toBuilder()).build());
        }
        return inPlace;
    }

    /**
     * True when the transport recognizes the device at the recorded number as another one than the record's
     * (their identities differ). The kernel hands device numbers out afresh at every boot: after a reboot, a map
     * a restage of another volume made may have the number this record names, and a raw block volume (which no
     * staging mount ties to its device) would otherwise be taken as staged on it, and published with the other
     * volume's data. A device the transport does not recognize, or a record without an identity, proves nothing.
     */
    private static boolean numberNowNamesAnotherDevice(StagingRecord record, Transport transport)
            throws VolumeException {
        String recorded = record.getDevice().getIdentity();
        if (recorded.isEmpty()) {
            return false;
        }
        return transport.attachmentOf(StagingRecords.deviceNumber(record))
                .filter(now -> DeviceIdentity.provablyDifferent(recorded, now.identity()))
                .isPresent();
    }
}
