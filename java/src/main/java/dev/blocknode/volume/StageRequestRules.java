package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.Transports;

/**
 * What NodeStageVolume can tell from the request alone, before it touches the host: the transport the contexts
 * name, each of that transport's keys and secrets, and the fencing key against the access mode. The stager runs
 * it first; {@code blocknode pv} runs it on every PV it prints, so that a PV it prints is one the plugin accepts.
 */
public final class StageRequestRules {

    private final Transports transports;

    public StageRequestRules(Transports transports) {
        this.transports = transports;
    }

    /**
     * Checks {@code request} and answers the name of the transport that would attach it.
     *
     * @throws VolumeException INVALID_ARGUMENT (or FAILED_PRECONDITION, for a fencing that cannot be met) naming
     *                         the key, exactly as a stage would fail
     */
    public String check(Requests.Stage request) throws VolumeException {
        return transportFor(request, attachRequest(request)).name();
    }

    Transport transportFor(Requests.Stage request, AttachRequest attachRequest) throws VolumeException {
        Transport transport = transports.select(attachRequest);
        transport.validate(attachRequest);
        VolumeFences.check(request.volumeId(), transport, request.capability().accessMode(), attachRequest);
        return transport;
    }

    static AttachRequest attachRequest(Requests.Stage request) {
        return new AttachRequest(request.volumeId(), request.volumeContext(), request.publishContext(),
                request.secrets());
    }
}
