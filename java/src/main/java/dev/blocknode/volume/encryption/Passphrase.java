package dev.blocknode.volume.encryption;

import java.nio.charset.StandardCharsets;

/**
 * A volume's LUKS passphrase, exactly as its secret gave it (cryptsetup reads {@code --key-file=-} byte for byte to
 * the end of its input, a trailing newline included). It only ever becomes a command's standard input; toString
 * names nothing of it, so that it cannot reach a log or a status message by accident.
 */
public final class Passphrase {

    private final byte[] bytes;

    Passphrase(String value) {
        this.bytes = value.getBytes(StandardCharsets.UTF_8);
    }

    /** A copy, for one command's standard input. */
    byte[] bytes() {
        return bytes.clone();
    }

    @Override
    public String toString() {
        return "Passphrase(redacted)";
    }
}
