package dev.blocknode.volume.encryption;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * The device-mapper name of a volume's dm-crypt mapping: {@value #PREFIX} and the first 32 hex digits of the
 * SHA-256 of the volume id. Derived, not stored, so a retry, an unstage and start-up recovery find the mapping
 * from the volume id alone; made of [0-9a-z-] only and 42 characters long (device-mapper allows 127), whatever the
 * volume id holds, so no volume id can spell a path, an option or another volume's mapping.
 */
public final class CryptMappingName {

    public static final String PREFIX = "blocknode-";

    /**
     * The device-mapper uuid cryptsetup gives a LUKS2 mapping it opens: this, the header's uuid in hex, a dash and the
     * mapping's name (a multipath map's is "mpath-" and its WWID).
     */
    public static final String LUKS2_DM_UUID_PREFIX = "CRYPT-LUKS2-";

    private static final int HEX_DIGITS = 32;
    private static final Pattern ANY = Pattern.compile(Pattern.quote(PREFIX) + "[0-9a-f]{" + HEX_DIGITS + "}");

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

    /**
     * True when the device-mapper device named {@code dmName} with uuid {@code dmUuid} is this volume's LUKS2 mapping
     * as cryptsetup opens it: the volume's name, and the uuid of a LUKS2 mapping of that name. A dm device that is
     * not both (an operator's mapping, a table someone loaded under our name) is not blocknode's to close.
     */
    public static boolean isVolumesMapping(String volumeId, String dmName, String dmUuid) {
        return dmName.equals(of(volumeId)) && dmUuid.startsWith(LUKS2_DM_UUID_PREFIX) && dmUuid.endsWith("-" + dmName);
    }

    /** True when the name has this class's form: some volume's mapping, not necessarily a given one's. */
    public static boolean hasForm(String dmName) {
        return ANY.matcher(dmName).matches();
    }
}
