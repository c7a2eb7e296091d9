package dev.blocknode.scsi;

import java.util.HexFormat;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A logical unit's World Wide Identifier, in whichever of its spellings it arrives:
 * <ul>
 *   <li>the kernel's sysfs {@code device/wwid}: {@code naa.60014052e3c1...}, {@code eui.0025385b...},
 *       {@code t10.ATA     QEMU HARDDISK    QM00001}, or a SCSI name string such as {@code iqn.2003-01...};</li>
 *   <li>the udev / multipath form (ID_SERIAL, the dm uuid after "mpath-", /etc/multipath/wwids): the
 *       designator type as one digit, then the designator: {@code 3} + NAA hex, {@code 2} + EUI-64 hex,
 *       {@code 1} + T10 vendor id with runs of blanks turned into one "_", {@code 8} + SCSI name string;</li>
 *   <li>what a user types: either of the above in any case, or bare hex with or without "0x" (no type).</li>
 * </ul>
 * Two WWIDs {@link #matches} when their designators are equal ignoring case (and, for T10 ids, how blanks
 * were spelt) and their types agree where both are known.
 */
public final class Wwid {

    /** Designator types of SPC-4 VPD page 0x83 that identify a logical unit, with the udev/multipath digit. */
    public enum Type {
        T10('1'), EUI64('2'), NAA('3'), NAME('8'),
        /** Bare hex from a user: NAA or EUI-64, the type was not said. */
        UNTYPED('\0');

        private final char digit;

        Type(char digit) {
            this.digit = digit;
        }
    }

    private static final Pattern HEX = Pattern.compile("[0-9a-fA-F]+");
    private static final Pattern BLANKS = Pattern.compile("[\\s_]+");

    private final Type type;
    private final String value;
    private final String key;

    private Wwid(Type type, String value) {
        this.type = type;
        this.value = value;
        this.key = matchKey(type, value);
    }

    public static Wwid naa(String hex) {
        return hex(Type.NAA, hex);
    }

    public static Wwid eui64(String hex) {
        return hex(Type.EUI64, hex);
    }

    public static Wwid t10(String vendorId) {
        String text = vendorId.strip();
        if (text.isEmpty()) {
            throw new IllegalArgumentException("an empty T10 vendor id is not a WWID");
        }
        return new Wwid(Type.T10, text);
    }

    /** A SCSI name string designator; "naa." and "eui." names are the NAA / EUI-64 they spell. */
    public static Wwid name(String scsiName) {
        String text = scsiName.strip();
        String lower = text.toLowerCase(Locale.ROOT);
        if (lower.startsWith("naa.")) {
            return naa(text.substring(4));
        }
        if (lower.startsWith("eui.")) {
            return eui64(text.substring(4));
        }
        if (text.isEmpty()) {
            throw new IllegalArgumentException("an empty SCSI name string is not a WWID");
        }
        return new Wwid(Type.NAME, text);
    }

    /**
     * Parses any accepted spelling (see the class comment).
     *
     * @throws IllegalArgumentException naming what is wrong with the text
     */
    public static Wwid parse(String text) {
        String s = text.strip();
        if (s.isEmpty()) {
            throw new IllegalArgumentException("an empty string is not a WWID");
        }
        String lower = s.toLowerCase(Locale.ROOT);
        if (lower.startsWith("naa.") || lower.startsWith("eui.")) {
            return name(s);
        }
        if (lower.startsWith("t10.")) {
            return t10(s.substring(4));
        }
        if (lower.startsWith("iqn.")) {
            return name(s);
        }
        if (lower.startsWith("0x")) {
            return hex(Type.UNTYPED, s.substring(2));
        }
        if (HEX.matcher(s).matches() && s.length() % 2 == 0) {
            // Designators are whole bytes: an even number of hex digits is a designator without its type.
            return hex(Type.UNTYPED, s);
        }
        String rest = s.substring(1);
        return switch (s.charAt(0)) {
            case '3' -> hex(Type.NAA, rest);
            case '2' -> hex(Type.EUI64, rest);
            case '1' -> t10(rest);
            case '8' -> name(rest);
            default -> throw new IllegalArgumentException("\"" + s + "\" is not a WWID: expected naa./eui./t10./iqn."
                    + " followed by the id, a udev/multipath WWID (3..., 2..., 1..., 8...) or hex");
        };
    }

    /** The kernel's sysfs {@code wwid} attribute of a SCSI device. */
    public static Wwid fromSysfs(String attribute) {
        return parse(attribute);
    }

    private static Wwid hex(Type type, String hex) {
        String digits = hex.strip();
        if (!HEX.matcher(digits).matches() || digits.length() % 2 != 0) {
            throw new IllegalArgumentException("\"" + hex + "\" is not a whole number of hex bytes");
        }
        return new Wwid(type, digits.toLowerCase(Locale.ROOT));
    }

    static Wwid ofBytes(Type type, byte[] designator) {
        return new Wwid(type, HexFormat.of().formatHex(designator));
    }

    private static String matchKey(Type type, String value) {
        String lower = value.toLowerCase(Locale.ROOT);
        if (type == Type.T10) {
            // The kernel keeps the vendor id's blanks ("ATA     QEMU"); multipath squeezes each run to "_".
            String squeezed = BLANKS.matcher(lower).replaceAll("_");
            int start = 0;
            int end = squeezed.length();
            while (start < end && squeezed.charAt(start) == '_') {
                start++;
            }
            while (end > start && squeezed.charAt(end - 1) == '_') {
                end--;
            }
            return squeezed.substring(start, end);
        }
        return lower;
    }

    public Type type() {
        return type;
    }

    /** The designator without any type marker: hex for NAA/EUI-64, text for T10 and names. */
    public String value() {
        return value;
    }

    /**
     * Same logical unit: equal designators ignoring case and T10 blank spelling, and no conflicting types
     * (a bare-hex WWID from a user matches an NAA or EUI-64 with the same digits).
     */
    public boolean matches(Wwid other) {
        if (type != other.type && type != Type.UNTYPED && other.type != Type.UNTYPED) {
            return false;
        }
        return key.equals(other.key);
    }

    /** Whether any of {@code candidates} {@link #matches} this. */
    public boolean matchesAny(Iterable<Wwid> candidates) {
        for (Wwid candidate : candidates) {
            if (matches(candidate)) {
                return true;
            }
        }
        return false;
    }

    /**
     * The udev/multipath spelling: what the dm uuid holds after "mpath-", and what {@code multipath -a}
     * registers. For an UNTYPED WWID, just the hex (the type digit is unknown).
     */
    public String multipathForm() {
        return switch (type) {
            case T10 -> "1" + BLANKS.matcher(value.strip()).replaceAll("_");
            case UNTYPED -> value;
            default -> type.digit + value;
        };
    }

    /** The kernel's sysfs spelling ("naa.6001405...", "t10.ATA QEMU..."). */
    public String sysfsForm() {
        return switch (type) {
            case NAA -> "naa." + value;
            case EUI64 -> "eui." + value;
            case T10 -> "t10." + value;
            case NAME, UNTYPED -> value;
        };
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Wwid that && type == that.type && key.equals(that.key);
    }

    @Override
    public int hashCode() {
        return Objects.hash(type, key);
    }

    /** The multipath form: the spelling an operator sees in {@code multipath -ll}. */
    @Override
    public String toString() {
        return multipathForm();
    }
}
