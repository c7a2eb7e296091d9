package dev.blocknode.transport.san;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.LunPath;
import dev.blocknode.scsi.reservation.PersistentReservations;
import dev.blocknode.scsi.reservation.RegisteredKeys;
import dev.blocknode.scsi.reservation.Reservation;
import dev.blocknode.scsi.reservation.ScsiCommandException;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Logger;

/**
 * A LUN's path devices as the fencing protocol uses them, each one I_T nexus: listing them, reading the LUN's
 * reservation through the first that answers, unregistering them. What acquisition, renewal and release share.
 */
final class LunPaths {

    private static final Logger LOG = Logger.getLogger(LunFencing.class.getName()); // the protocol's one source

    /** The LUN's reservation and registrations, and the path that answered. */
    record Answer(LunPath path, Reservation reservation, RegisteredKeys keys) {
    }

    private final PersistentReservations pr;
    private final LunFencing.PathDevices devices;

    LunPaths(PersistentReservations pr, LunFencing.PathDevices devices) {
        this.pr = pr;
        this.devices = devices;
    }

    /** The path devices present now. */
    List<LunPath> of(Attachment attachment) throws IOException {
        return devices.of(attachment);
    }

    /** The path devices a stage reserves through: INTERNAL when they cannot be listed or there is none. */
    List<LunPath> toReserve(String volumeId, Attachment attachment) throws VolumeException {
        try {
            List<LunPath> paths = devices.of(attachment);
            if (paths.isEmpty()) {
                throw VolumeException.internal("volume " + volumeId + ": the LUN has no path device to reserve it"
                        + " through", null);
            }
            return paths;
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot list the LUN's path devices", e);
        }
    }

    /** The reservation and registrations, through the first path that answers. */
    Answer read(List<LunPath> paths) throws IOException {
        IOException last = null;
        for (LunPath path : paths) {
            try {
                return new Answer(path, pr.readReservation(path), pr.readKeys(path));
            } catch (ScsiCommandException.NotSupported e) {
                throw e;
            } catch (IOException e) {
                last = e;
            }
        }
        throw last != null ? last : new IOException("the LUN has no path");
    }

    /**
     * REGISTER AND IGNORE EXISTING KEY with {@code key} on every path: returns those whose nexus has it now. A
     * path that does not take it is logged; the next renewal tries it again.
     */
    List<LunPath> register(String volumeId, List<LunPath> paths, FenceKey key) {
        List<LunPath> registered = new ArrayList<>();
        for (LunPath path : paths) {
            try {
                pr.registerIgnoringExisting(path, key.value());
                registered.add(path);
            } catch (IOException e) {
                LOG.warning(() -> "volume " + volumeId + ": path " + path + " did not register key " + key
                        + " (it will be tried at the next renewal): " + e.getMessage());
            }
        }
        return registered;
    }

    /** Unregisters every path that answers (REGISTER AND IGNORE EXISTING KEY with 0); returns those. */
    List<LunPath> unregister(String volumeId, List<LunPath> paths) {
        List<LunPath> answered = new ArrayList<>();
        for (LunPath path : paths) {
            try {
                pr.registerIgnoringExisting(path, 0);
                answered.add(path);
            } catch (IOException e) {
                LOG.warning(() -> "volume " + volumeId + ": cannot unregister path " + path + ": " + e.getMessage());
            }
        }
        return answered;
    }
}
