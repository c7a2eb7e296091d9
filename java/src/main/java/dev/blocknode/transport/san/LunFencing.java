package dev.blocknode.transport.san;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.LunPath;
import dev.blocknode.scsi.reservation.PersistentReservations;
import dev.blocknode.scsi.reservation.PrType;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing;

import java.io.IOException;
import java.util.List;

/**
 * The fencing protocol on a SCSI LUN, across its paths: every path device is one I_T nexus, and a registration
 * belongs to the nexus it was made through (through a multipath map SG_IO would reach one path only), so each
 * path registers for itself and one reserves, with type 5, Write Exclusive - Registrants Only: only registered
 * nexuses may write, everyone may read. See {@link TakeoverRule} for when a held LUN may be taken.
 * <p>
 * Each job is a class of its own, over the {@link LunPaths} they share: {@link FenceAcquisition} (the stage),
 * {@link FenceRenewal} (the proof of life) and {@link FenceRelease}. They all log as this class, so the
 * protocol's lines keep the one source an operator filters on.
 */
public final class LunFencing implements Fencing {

    static final PrType TYPE = PrType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY;

    /** The path devices of an attached LUN present now: each one I_T nexus. */
    @FunctionalInterface
    public interface PathDevices {
        List<LunPath> of(Attachment attachment) throws IOException;
    }

    private final FenceAcquisition acquisition;
    private final FenceRenewal renewal;
    private final FenceRelease release;

    public LunFencing(PersistentReservations pr, PathDevices pathDevices, TakeoverRule takeover) {
        LunPaths lunPaths = new LunPaths(pr, pathDevices);
        PrGenerations generations = new PrGenerations();
        this.acquisition = new FenceAcquisition(pr, lunPaths, takeover, generations);
        this.renewal = new FenceRenewal(pr, lunPaths, generations);
        this.release = new FenceRelease(pr, lunPaths, generations);
    }

    @Override
    public Acquired acquire(String volumeId, Attachment attachment, FenceKey node) throws VolumeException {
        return acquisition.acquire(volumeId, attachment, node);
    }

    @Override
    public Renewal renew(String volumeId, Attachment attachment, FenceKey current) {
        return renewal.renew(volumeId, attachment, current);
    }

    @Override
    public void release(String volumeId, Attachment attachment, FenceKey node) {
        release.release(volumeId, attachment, node);
    }
}
