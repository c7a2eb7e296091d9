package dev.blocknode.transport.nvme;

import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;

import java.util.Optional;
import java.util.regex.Pattern;

/**
 * NVMe in-band authentication (DH-HMAC-CHAP) keys from the NodeStageVolume secrets, under the kernel's own
 * option names: {@code dhchap_secret} (the host's key) and optionally {@code dhchap_ctrl_secret} (the
 * controller's, for bidirectional authentication), each in the "DHHC-1:hh:base64:" form nvme-cli's gen-dhchap-key
 * prints. They go into the options string written to /dev/nvme-fabrics and nowhere else: never a log line, an
 * argv or the state dir; toString names no value.
 */
final class DhchapKeys {

    static final String HOST_KEY = "dhchap_secret";
    static final String CONTROLLER_KEY = "dhchap_ctrl_secret";

    /** TP 8006's key representation: version 1, a hash id 00-03, base64 of the key and its CRC. */
    private static final Pattern KEY = Pattern.compile("DHHC-1:0[0-3]:[A-Za-z0-9+/]{4,}={0,2}:");

    private final String hostKey;
    private final Optional<String> controllerKey;

    private DhchapKeys(String hostKey, Optional<String> controllerKey) {
        this.hostKey = hostKey;
        this.controllerKey = controllerKey;
    }

    static Optional<DhchapKeys> from(Secrets secrets) throws VolumeException {
        Optional<String> host = secrets.get(HOST_KEY);
        Optional<String> controller = secrets.get(CONTROLLER_KEY);
        if (host.isEmpty()) {
            if (controller.isPresent()) {
                throw VolumeException.invalid("secrets give " + CONTROLLER_KEY + " without " + HOST_KEY
                        + ": the controller is authenticated only after the host is");
            }
            return Optional.empty();
        }
        checked(HOST_KEY, host.get());
        if (controller.isPresent()) {
            checked(CONTROLLER_KEY, controller.get());
        }
        return Optional.of(new DhchapKeys(host.get(), controller));
    }

    private static void checked(String key, String value) throws VolumeException {
        if (!KEY.matcher(value).matches()) {
            throw VolumeException.invalid("secret " + key + " is not a DH-HMAC-CHAP key (DHHC-1:<hash>:<base64>:)");
        }
    }

    /** The options that carry the keys: for the fabrics options string only. */
    String options() {
        return "," + HOST_KEY + "=" + hostKey + controllerKey.map(k -> "," + CONTROLLER_KEY + "=" + k).orElse("");
    }

    /** Whether a controller's sysfs attributes show these keys (what a connect made with them shows). */
    boolean shownBy(String hostAttribute, Optional<String> controllerAttribute) {
        return hostKey.equals(hostAttribute.strip())
                && controllerKey.map(k -> controllerAttribute.map(a -> k.equals(a.strip())).orElse(false)).orElse(true);
    }

    @Override
    public String toString() {
        return "DhchapKeys[" + HOST_KEY + (controllerKey.isPresent() ? ", " + CONTROLLER_KEY : "")
                + "] (values redacted)";
    }
}
