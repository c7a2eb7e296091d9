package dev.blocknode.transport.nvme;

import dev.blocknode.nvme.reservation.NvmeReservations;
import dev.blocknode.os.block.NvmePassThrough;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing;
import dev.blocknode.transport.san.FenceSettings;
import dev.blocknode.transport.san.PrGenerations;
import dev.blocknode.transport.san.TakeoverRule;

import java.util.List;
import java.util.Optional;

/**
 * Fencing of an NVMe/TCP namespace with NVMe reservations, sent through its head device (the native multipath
 * head, {@link Attachment#device()}): this node's key registered for its host ID, Write Exclusive - Registrants Only
 * held. The same rules as a SCSI LUN's ({@code transport.san.LunFencing}): the node's key, the takeover rule and the
 * generation floor are shared with it. One registration covers every controller the node connected with its host
 * ID, so a fenced volume needs an explicit one, carried by every controller of its head ({@link ControllerHostIds}).
 * <p>
 * Each job is a class of its own: {@link NamespaceAcquisition} (the stage), {@link NamespaceRenewal} (the proof of
 * life) and {@link NamespaceRelease} (the unstage).
 */
final class NamespaceFencing implements Fencing {

    private final HeadCheck heads;
    private final ControllerHostIds hostIds;
    private final PrGenerations generations = new PrGenerations();
    private final NamespaceAcquisition acquisition;
    private final NamespaceRenewal renewal;
    private final NamespaceRelease release;

    NamespaceFencing(NvmePassThrough nvme, NvmeControllers controllers, FenceSettings fence) {
        this.heads = new HeadCheck(controllers);
        this.hostIds = new ControllerHostIds(controllers);
        NvmeReservations reservations = new NvmeReservations(nvme, heads, fence.commandTimeout());
        this.acquisition = new NamespaceAcquisition(reservations,
                new TakeoverRule(fence.takeoverAfter(), fence.nanoTime()), generations);
        this.renewal = new NamespaceRenewal(reservations, generations);
        this.release = new NamespaceRelease(reservations);
    }

    /**
     * Unsupported without a configured host ID (the kernel's own changes with every boot, so a rebooted node would
     * come back as another registrant) or where the namespace has no reservations.
     *
     * @throws VolumeException FAILED_PRECONDITION when a controller of the head is another host, or another node
     *                         holds the namespace and the takeover rule keeps it
     */
    @Override
    public Acquired acquire(String volumeId, Attachment attachment, FenceKey key) throws VolumeException {
        Optional<String> hostId = ControllerHostIds.configured(attachment);
        if (hostId.isEmpty()) {
            return new Unsupported("no host ID configured: the kernel picked one for its NVMe connections, which a"
                    + " reboot changes (set " + HostIdentity.DEFAULT_DIRECTORY + "/hostid or volume_context."
                    + NvmeVolumeSpec.HOST_ID + ")");
        }
        List<NvmeControllers.Controller> reaching = hostIds.requireOnEvery(volumeId, attachment, hostId.get());
        heads.expect(attachment);
        Acquired acquired = acquisition.acquire(volumeId, attachment.device(), key);
        if (acquired instanceof Held held) {
            return new Held(held.key(), reaching.size(), held.tookOverFrom());
        }
        return acquired;
    }

    @Override
    public Renewal renew(String volumeId, Attachment attachment, FenceKey current) {
        heads.expect(attachment);
        return renewal.renew(volumeId, attachment.device(), current);
    }

    @Override
    public void release(String volumeId, Attachment attachment, FenceKey key) {
        // The takeover observation stays: a refused stage's undo releases too, and its retry must find it.
        generations.forget(volumeId);
        heads.expect(attachment);
        try {
            release.release(volumeId, attachment.device(), key);
        } finally {
            heads.forget(attachment);
        }
    }
}
