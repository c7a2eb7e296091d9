package dev.blocknode.volume.encryption;

import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;

import java.util.Locale;
import java.util.Optional;

/**
 * Whether a volume is encrypted on the node: volume_context {@value #ENCRYPTION} ({@code luks2}, or {@code none},
 * the default), read with the contexts' precedence (publish_context over volume_context), and its passphrase, the
 * NodeStageVolume secret {@value #PASSPHRASE}. Checked from the request alone, before anything is attached.
 */
public final class EncryptionKeys {

    public static final String ENCRYPTION = "encryption";
    public static final String PASSPHRASE = "encryptionPassphrase";

    /** cryptsetup's own ceiling for a key file is 8 MiB; a passphrase has no use for more than this. */
    static final int MAX_PASSPHRASE_BYTES = 8192;

    private EncryptionKeys() {
    }

    /** True when the volume asks for LUKS2 (its passphrase unchecked: see {@link #passphrase}). */
    public static boolean encrypted(AttachRequest contexts) throws VolumeException {
        String value = contexts.key(ENCRYPTION).orElse("none").strip().toLowerCase(Locale.ROOT);
        return switch (value) {
            case "luks2" -> true;
            case "none" -> false;
            default -> throw VolumeException.invalid("volume_context." + ENCRYPTION + " must be luks2 or none");
        };
    }

    /**
     * The passphrase of a volume that asks for LUKS2; empty for one that does not.
     *
     * @throws VolumeException INVALID_ARGUMENT for an unknown {@value #ENCRYPTION} or an encrypted volume whose
     *                         secrets lack {@value #PASSPHRASE} or hold an empty or oversized one (never quoting it)
     */
    public static Optional<Passphrase> passphrase(AttachRequest contexts) throws VolumeException {
        if (!encrypted(contexts)) {
            return Optional.empty();
        }
        Optional<String> secret = contexts.secrets() == null ? Optional.empty() : contexts.secrets().get(PASSPHRASE);
        if (secret.isEmpty() || secret.get().isEmpty()) {
            throw VolumeException.invalid("volume_context." + ENCRYPTION + " is luks2, but the NodeStageVolume"
                    + " secrets hold no " + PASSPHRASE + " (or an empty one): set the StorageClass's or PV's"
                    + " node-stage secret");
        }
        return Optional.of(bounded(secret.get()));
    }

    /**
     * The passphrase NodeExpandVolume brings for an encrypted volume, in its secrets (CSI 1.5): cryptsetup needs it to
     * grow a LUKS2 mapping whose volume key is in the kernel's keyring, as it is by default.
     *
     * @throws VolumeException INVALID_ARGUMENT for secrets without {@value #PASSPHRASE}, or with an empty or
     *                         oversized one (never quoting it)
     */
    public static Passphrase expandPassphrase(String volumeId, Secrets secrets) throws VolumeException {
        Optional<String> secret = secrets == null ? Optional.empty() : secrets.get(PASSPHRASE);
        if (secret.isEmpty() || secret.get().isEmpty()) {
            throw VolumeException.invalid("volume " + volumeId + " is encrypted (LUKS2), but the NodeExpandVolume"
                    + " secrets hold no " + PASSPHRASE + " (or an empty one): set the StorageClass's or PV's"
                    + " node-expand secret (csi.storage.k8s.io/node-expand-secret-name); nothing was grown");
        }
        return bounded(secret.get());
    }

    private static Passphrase bounded(String secret) throws VolumeException {
        Passphrase passphrase = new Passphrase(secret);
        if (passphrase.bytes().length > MAX_PASSPHRASE_BYTES) {
            throw VolumeException.invalid("secret " + PASSPHRASE + " is longer than " + MAX_PASSPHRASE_BYTES
                    + " bytes");
        }
        return passphrase;
    }
}
