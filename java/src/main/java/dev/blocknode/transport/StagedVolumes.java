package dev.blocknode.transport;

import dev.blocknode.os.DeviceNumber;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The volumes this node has staged or is staging, as their staging records say: what a transport that shares
 * one connection between several volumes (an NVMe controller) asks before it drops that connection. The
 * records are written before an attach starts and deleted only after a detach ended, so a volume whose attach
 * is under way, or whose device is mounted, published or merely recorded, is always listed. The volume layer
 * implements it over its records; this layer only declares what it needs.
 */
@FunctionalInterface
public interface StagedVolumes {

    /**
     * One recorded volume: its id, the device recorded for it (none while its attach runs), the contexts it was
     * staged with (never secrets) and what its transport recorded beside the device.
     */
    record StagedVolume(String volumeId, Optional<DeviceNumber> device, AttachRequest request,
                        Map<String, String> attachment) {

        public StagedVolume {
            attachment = Map.copyOf(attachment);
        }
    }

    /** Every recorded volume of {@code transport}, in any phase. */
    List<StagedVolume> of(String transport) throws IOException;

    /**
     * The record files that cannot be read (named): volumes of any transport, whose connections are unknown. A
     * connection that one of them may use is kept, as if it were used.
     */
    default List<String> unreadable() {
        return List.of();
    }

    /** No volume recorded anywhere: for tests and tools without a state dir. */
    StagedVolumes NONE = transport -> List.of();
}
