package dev.blocknode.transport.nvme;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.Attachment;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The host ID a fenced namespace is reached as. An NVMe registrant is a host ID: every controller connected with
 * this node's host ID shares its one registration, and a controller connected with another (by hand, or by the
 * kernel's own random ID when none is configured) is a second host, unregistered, whose writes the reservation
 * refuses. So a fenced volume needs an explicit host ID, the same after a restart or a reboot (/etc/nvme/hostid or
 * volume_context hostID, recorded at attach), and every controller that reaches its head must carry it.
 */
final class ControllerHostIds {

    static final String ATTRIBUTE = "hostid";

    private final NvmeControllers controllers;

    ControllerHostIds(NvmeControllers controllers) {
        this.controllers = controllers;
    }

    /** {@code attachment} with the host ID its controllers were connected with, when one was configured. */
    static Attachment recorded(Attachment attachment, HostIdentity identity) {
        if (identity.hostId().isEmpty()) {
            return attachment;
        }
        Map<String, String> details = new LinkedHashMap<>(attachment.details());
        details.put(NvmeTcpTransport.DETAIL_HOST_ID, identity.hostId().get());
        return new Attachment(attachment.transport(), attachment.device(), attachment.number(),
                attachment.identity(), details);
    }

    /** The host ID the volume was attached as, when one was configured (none: the kernel picked one). */
    static Optional<String> configured(Attachment attachment) {
        return Optional.ofNullable(attachment.details().get(NvmeTcpTransport.DETAIL_HOST_ID));
    }

    /** Whether {@code controller} was connected as {@code hostId}; false when the kernel shows no host ID. */
    boolean carries(NvmeControllers.Controller controller, String hostId) throws IOException {
        return controllers.attribute(controller, ATTRIBUTE).map(id -> same(id, hostId)).orElse(false);
    }

    /**
     * The controllers through which the head reaches its namespace, each checked to carry {@code hostId}.
     *
     * @throws VolumeException FAILED_PRECONDITION naming a controller connected as another host; INTERNAL when
     *                         sysfs cannot be read or the head is gone
     */
    List<NvmeControllers.Controller> requireOnEvery(String volumeId, Attachment attachment, String hostId)
            throws VolumeException {
        try {
            Optional<String> disk = controllers.diskOf(attachment.number());
            if (disk.isEmpty()) {
                throw VolumeException.internal("volume " + volumeId + ": its namespace disk " + attachment.device()
                        + " is gone", null);
            }
            List<NvmeControllers.Controller> reaching = controllers.pathsOf(disk.get()).stream()
                    .map(NvmeControllers.NamespacePath::controller).distinct().toList();
            for (NvmeControllers.Controller controller : reaching) {
                Optional<String> id = controllers.attribute(controller, ATTRIBUTE);
                if (id.isEmpty() || !same(id.get(), hostId)) {
                    throw VolumeException.precondition("volume " + volumeId + " cannot be fenced: controller "
                            + controller.name() + " of " + controller.subsystemNqn() + " reaches its namespace as host"
                            + " ID " + id.orElse("(none shown)") + ", not this node's " + hostId + "; it would be a"
                            + " second host the reservation does not cover (disconnect it, or connect it with this"
                            + " node's host ID)");
                }
            }
            return reaching;
        } catch (IOException e) {
            throw VolumeException.internal("volume " + volumeId + ": cannot read the host IDs of the controllers of "
                    + attachment.device(), e);
        }
    }

    private static boolean same(String shown, String hostId) {
        return shown.strip().toLowerCase(Locale.ROOT).equals(hostId.toLowerCase(Locale.ROOT));
    }
}
