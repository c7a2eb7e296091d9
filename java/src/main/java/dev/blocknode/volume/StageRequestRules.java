package dev.blocknode.volume;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachPlan;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.KeyProblems;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.StagePlan.FilesystemPlan;
import dev.blocknode.volume.encryption.EncryptionKeys;
import dev.blocknode.volume.encryption.Passphrase;
import dev.blocknode.volume.request.AccessType;
import dev.blocknode.volume.request.Requests;
import dev.blocknode.volume.request.VolumeCapability;

import java.util.List;
import java.util.Optional;

/**
 * What NodeStageVolume can tell from the request's contexts, capability and secrets alone, before it touches the
 * host: the encryption key's value, the transport the contexts name, each of that transport's keys and secrets, the
 * fencing key against the access mode, the filesystem and its keys, the encryption passphrase. One reading
 * ({@link #read}) serves both the stage, whose {@link StagePlan} is made of it, and {@code blocknode pv}, which asks
 * for every {@link #problems} of each PV it prints, so that a PV it prints is one the plugin accepts.
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
     * What {@link #read} made of a request's keys: for a stage all of it (the filesystem empty for a raw block
     * volume, the passphrase for an unencrypted one); for {@code blocknode pv} what could be read despite its problems.
     *
     * @param attachPlan the transport's reading of its keys, for its attach: a stage's only
     */
    record StageKeys(AttachRequest attachRequest, Optional<Transport> transport, Optional<AttachPlan> attachPlan,
                     Optional<FilesystemPlan> filesystem, Optional<Passphrase> passphrase) {
    }

    /**
     * Every problem a stage of {@code request} would meet before it touches the host, not only the first, with the
     * keys read as a new PersistentVolume should write them ({@link KeyProblems.Reading#NEW_VOLUME}). For a tool
     * that writes PVs ({@code blocknode pv}): their secrets are in a Secret it cannot read, so only whether the PV
     * names one counts, and an encrypted volume without one is refused as its stage would be.
     */
    public Findings problems(Requests.Stage request, boolean secretNamed) {
        StageKeyReading reading = StageKeyReading.newVolume(secretNamed);
        try {
            StageKeys keys = read(request, reading);
            return new Findings(keys.transport().map(Transport::name), reading.problems());
        } catch (VolumeException e) {
            throw new IllegalStateException("a reading that records every problem threw one", e);
        }
    }

    /**
     * Reads the request's keys, in the order a stage has always checked them (so its first problem is the same): the
     * encryption key's value, the transport, its keys and fencing, the fs_type and the filesystem keys, the
     * passphrase.
     *
     * @throws VolumeException a stage's first problem: INVALID_ARGUMENT, or what the transport's or the fencing's
     *                         checks say ({@code blocknode pv}'s reading records them instead)
     */
    StageKeys read(Requests.Stage request, StageKeyReading reading) throws VolumeException {
        AttachRequest attachRequest = attachRequest(request);
        VolumeCapability capability = request.capability();
        boolean encrypted = reading.step(() -> EncryptionKeys.encrypted(attachRequest)).orElse(false);
        Optional<Transport> transport = reading.step(() -> transports.select(attachRequest));
        Optional<AttachPlan> attachPlan = Optional.empty();
        if (transport.isPresent()) {
            attachPlan = reading.step(() -> {
                Optional<AttachPlan> planned = reading.checkTransportKeys(transport.get(), attachRequest);
                VolumeFences.check(request.volumeId(), transport.get(), capability.accessMode(), attachRequest);
                return planned.orElse(null);
            });
        }
        Optional<FilesystemPlan> filesystem = Optional.empty();
        if (capability.accessType() instanceof AccessType.Mount) {
            filesystem = reading.step(() -> FilesystemKeys.plan(attachRequest,
                    StageRetryRules.requestedFilesystem(capability), reading.nodeDefault()));
        }
        Optional<Passphrase> passphrase = Optional.empty();
        if (encrypted && reading.secretsAsAtStage()) {
            passphrase = reading.step(() -> EncryptionKeys.passphrase(attachRequest)).flatMap(p -> p);
        }
        return new StageKeys(attachRequest, transport, attachPlan, filesystem, passphrase);
    }

    private static AttachRequest attachRequest(Requests.Stage request) {
        return new AttachRequest(request.volumeId(), request.volumeContext(), request.publishContext(),
                request.secrets());
    }
}
