package dev.blocknode.volume.record;

import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.StagedVolumes;

import java.util.List;
import java.util.Optional;

/**
 * The staging records as a transport asks about them ({@link StagedVolumes}): every volume of the transport,
 * in any phase, with what its record holds. A record is written before an attach begins and deleted after the
 * detach ended, so a volume is listed for as long as anything of it may be on the node.
 */
public final class RecordedStagedVolumes implements StagedVolumes {

    private final RecordStore store;

    public RecordedStagedVolumes(RecordStore store) {
        this.store = store;
    }

    @Override
    public List<StagedVolume> of(String transport) {
        return store.all().stream()
                .filter(r -> r.getTransport().equals(transport))
                .map(this::volume)
                .toList();
    }

    @Override
    public List<String> unreadable() {
        return store.unreadable().stream().map(e -> e.file().toString()).toList();
    }

    /** A record of an earlier boot names no device: its number is of that boot (see {@link RecordedBoot}). */
    private StagedVolume volume(StagingRecord record) {
        boolean numbered = record.hasDevice() && RecordedBoot.of(record, store.bootId()) != RecordedBoot.EARLIER_BOOT;
        return new StagedVolume(record.getVolumeId(),
                numbered ? Optional.of(StagingRecords.deviceNumber(record)) : Optional.empty(),
                StagingRecords.attachRequest(record), record.getAttachmentMap());
    }
}
