package dev.blocknode.transport.fc;

import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Fibre Channel port names (WWPNs) in the one spelling this code compares: 16 lower-case hex digits. Users
 * and sysfs write them as "0x500601603ba0415a", "50:06:01:60:3B:A0:41:5A" or bare hex.
 */
public final class Wwpn {

    private static final Pattern SIXTEEN_HEX = Pattern.compile("[0-9a-f]{16}");

    private Wwpn() {
    }

    /**
     * @throws IllegalArgumentException when the text is not 16 hex digits after dropping "0x" and colons
     */
    public static String normalize(String text) {
        String s = text.strip().toLowerCase(Locale.ROOT);
        if (s.startsWith("0x")) {
            s = s.substring(2);
        }
        if (s.contains(":")) {
            String[] bytes = s.split(":", -1);
            if (bytes.length != 8) {
                throw new IllegalArgumentException("\"" + text + "\" is not a WWPN: colon-separated form needs 8 bytes");
            }
            for (String b : bytes) {
                if (b.length() != 2) {
                    throw new IllegalArgumentException("\"" + text + "\" is not a WWPN: each byte needs 2 hex digits");
                }
            }
            s = String.join("", bytes);
        }
        if (!SIXTEEN_HEX.matcher(s).matches()) {
            throw new IllegalArgumentException("\"" + text + "\" is not a WWPN: expected 16 hex digits");
        }
        return s;
    }
}
