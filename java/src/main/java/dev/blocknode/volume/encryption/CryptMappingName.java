package dev.blocknode.volume.encryption;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The device-mapper name of a volume's dm-crypt mapping: {@value #PREFIX} and the first 32 hex digits of the
 * SHA-256 of the volume id. Derived, not stored, so a retry, an unstage and start-up recovery find the mapping
 * from the volume id alone; made of [0-9a-z-] only and 42 characters long (device-mapper allows 127), whatever the
 * volume id holds, so no volume id can spell a path, an option or another volume's mapping.
 */
public final class CryptMappingName {

    public static final String PREFIX = "blocknode-";

    private static final int HEX_DIGITS = 32;

    private CryptMappingName() {
    }

    public static String of(String volumeId) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(volumeId.getBytes(StandardCharsets.UTF_8));
            return PREFIX + HexFormat.of().formatHex(digest).substring(0, HEX_DIGITS);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime has SHA-256", e);
        }
    }
}
