package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.KeyProblems;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.encryption.EncryptionKeys;
import dev.blocknode.volume.filesystem.FilesystemType;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.Requests;

import java.util.List;
import java.util.Optional;

/**
 * What NodeStageVolume can tell from the request alone, before it touches the host: the encryption key's value, the
 * transport the contexts name, each of that transport's keys and secrets, and the fencing key against the access
 * mode. The stager runs it first (and checks the filesystem keys itself, against its default filesystem, and the
 * encryption passphrase); {@code blocknode pv} asks it for every {@link #problems} of each PV it prints, so that a PV
 * it prints is one the plugin accepts.
 */
public final class StageRequestRules {

    private final Transports transports;

    public StageRequestRules(Transports transports) {
        this.transports = transports;
    }

    /** What {@link #problems} found: the transport that would attach the volume, when one is named, and every problem. */
    public record Findings(Optional<String> transport, List<String> problems) {
    }

    /**
     * Every problem a stage of {@code request} would meet before it touches the host, not only the first, with the
     * keys read as a new PersistentVolume should write them ({@link KeyProblems.Reading#NEW_VOLUME}). For a tool
     * that writes PVs ({@code blocknode pv}): their secrets are in a Secret it cannot read, so only whether the PV
     * names one counts, and an encrypted volume without one is refused as its stage would be.
     */
    public Findings problems(Requests.Stage request, boolean secretNamed) {
        AttachRequest attachRequest = attachRequest(request);
        KeyProblems problems = new KeyProblems(KeyProblems.Reading.NEW_VOLUME);
        boolean encrypted = found(problems, () -> EncryptionKeys.encrypted(attachRequest)).orElse(false);
        if (encrypted && !secretNamed) {
            found(problems, () -> EncryptionKeys.passphrase(attachRequest)); // no secrets: the stage's refusal
        }
        Optional<Transport> transport = found(problems, () -> transports.select(attachRequest));
        transport.ifPresent(t -> found(problems, () -> {
            t.check(attachRequest, problems);
            VolumeFences.check(request.volumeId(), t, request.capability().accessMode(), attachRequest);
            return null;
        }));
        if (request.capability().accessType() instanceof AccessType.Mount) {
            found(problems, () -> {
                Optional<FilesystemType> fsType = StageRetryRules.requestedFilesystem(request.capability());
                if (fsType.isPresent()) {
                    FilesystemKeys.check(attachRequest, fsType.get());
                } else {
                    FilesystemKeys.checkForEither(attachRequest);
                }
                return null;
            });
        }
        return new Findings(transport.map(Transport::name), problems.list());
    }

    /** A step's value, or empty after recording why it failed (any refusal: a fencing that cannot be met too). */
    private static <T> Optional<T> found(KeyProblems problems, KeyProblems.Step<T> step) {
        try {
            return Optional.ofNullable(step.run());
        } catch (VolumeException e) {
            problems.add(e.getMessage());
            return Optional.empty();
        }
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
