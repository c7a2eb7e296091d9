package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.encryption.EncryptionKeys;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.Requests;

import java.util.Optional;

/**
 * What NodeStageVolume can tell from the request alone, before it touches the host: the encryption key's value, the
 * transport the contexts name, each of that transport's keys and secrets, and the fencing key against the access mode. The stager runs
 * it first (and checks the filesystem keys itself, against its default filesystem); {@code blocknode pv} runs it on every PV it prints, so that a PV it prints is one the plugin accepts.
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
        AttachRequest attachRequest = attachRequest(request);
        String transport = transportFor(request, attachRequest).name();
        if (request.capability().accessType() instanceof AccessType.Mount) {
            Optional<FilesystemType> fsType = StageRetryRules.requestedFilesystem(request.capability());
            if (fsType.isPresent()) {
                FilesystemKeys.check(attachRequest, fsType.get());
            } else {
                FilesystemKeys.checkForEither(attachRequest);
            }
        }
        return transport;
    }

    Transport transportFor(Requests.Stage request, AttachRequest attachRequest) throws VolumeException {
        EncryptionKeys.encrypted(attachRequest); // its value only: blocknode pv has no secrets to check
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
