package dev.blocknode.transport;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * The formats of the volume_context values that name storage (iSCSI and NVMe names, WWIDs, WWPNs, portals, LUN
 * numbers): the one place they are written down. The transports check their keys with them at stage, {@code
 * blocknode pv} through the transports, and the deploy validator (Go) through deploy/validate/keyformats.json,
 * which {@code KeyFormatsUnitTest} writes from {@link #ALL} and fails when stale. So each pattern is written in the
 * regular-expression syntax java.util.regex and Go's RE2 share (no lookaround, no class intersection, no
 * possessive quantifiers), and matches a whole value; a test runs the same cases through both.
 */
public final class KeyFormats {

    /**
     * A value's format: {@code noun} names what it is ("an iSCSI name"); {@code pattern} matches the whole value; at most {@code maxLength} UTF-8 bytes (0: no limit);
     * a number at most {@code maxValue} (empty: not a number); {@code appliesWhen}, when not empty, is a prefix
     * pattern: a value that does not start with a match is not this format's concern (a local device's free-form
     * WWID).
     */
    public record Format(String name, String noun, String pattern, int maxLength, Optional<BigInteger> maxValue,
                         String appliesWhen, String description) {

        /** Whether {@code value} is of this format (true for one it does not apply to). */
        public boolean accepts(String value) {
            if (!appliesWhen.isEmpty() && !compiled(appliesWhen).matcher(value).lookingAt()) {
                return true;
            }
            if (maxLength > 0 && value.getBytes(StandardCharsets.UTF_8).length > maxLength) {
                return false;
            }
            if (!compiled(pattern).matcher(value).matches()) {
                return false;
            }
            return maxValue.isEmpty() || new BigInteger(value).compareTo(maxValue.get()) <= 0;
        }
    }

    private static final Map<String, Pattern> COMPILED = new ConcurrentHashMap<>();

    private static Pattern compiled(String pattern) {
        return COMPILED.computeIfAbsent(pattern, Pattern::compile);
    }

    /** A TCP port, 1..65535; leading zeros are taken (the plugin has always parsed the port as a number). */
    private static final String PORT = "0*([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]"
            + "|6553[0-5])";
    private static final String IPV4 = "((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}"
            + "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
    /** An IPv6 literal's shape (at least two colons); that it is a valid address is the platform's to say. */
    private static final String IPV6 = "[0-9A-Fa-f.]*:[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*";
    private static final String HEX = "[0-9A-Fa-f]";
    /** An NAA designator: NAA 6 (IEEE registered extended) is 16 bytes, every other NAA 8 (SPC-4 7.8.6.6). */
    private static final String NAA = "6" + HEX + "{31}|[0-57-9A-Fa-f]" + HEX + "{15}";
    /** An EUI-64 based designator: 8, 12 or 16 bytes (SPC-4 7.8.6.5). */
    private static final String EUI = HEX + "{16}|" + HEX + "{24}|" + HEX + "{32}";
    /**
     * A designator in hex without its type, NAA or EUI-64: 8, 12 or 16 bytes, but not 16 bytes starting with 3:
     * as an NAA that is NAA 3, always 8 bytes, so it is the multipath spelling (3, then an NAA 6's 32 digits) with
     * its last digit lost. (A 16-byte EUI-64 designator is written eui. and its hex.)
     */
    private static final String UNTYPED = HEX + "{16}|" + HEX + "{24}|[0-24-9A-Fa-f]" + HEX + "{31}";
    /** What a T10 vendor id or a SCSI name string may hold: printable, blanks inside. */
    private static final String TEXT = "[!-~][ -~]*";

    /**
     * iSCSI names (RFC 3720 3.2.6.3): {@code iqn.YYYY-MM.reversed.domain[:anything]}, {@code eui.} and 16 hex
     * digits, {@code naa.} and 16 or 32. In lower case: RFC 3722 normalises names to it, and the initiator and
     * target compare them byte by byte. (The plugin lower-cases an iqn key before checking it, so a PV written
     * with capitals still stages; {@code blocknode pv} and the validator ask for the normal form.) What follows an
     * IQN's colon is the naming authority's, and targets in the field use more than RFC 3722's characters there
     * (underscores, say); it may hold no slash (open-iscsi makes the name a directory of its database), and no
     * space, control, formatting or separator character.
     */
    public static final Format ISCSI_NAME = new Format("iscsiName", "an iSCSI name",
            "iqn\\.[0-9]{4}-[0-9]{2}\\.[a-z0-9][a-z0-9.-]*(:[^/\\p{C}\\p{Z}]+)?|eui\\.[0-9a-f]{16}"
                    + "|naa\\.([0-9a-f]{16}|[0-9a-f]{32})",
            223, Optional.empty(), "", "iqn.YYYY-MM.reversed.domain[:name], eui.<16 hex> or naa.<16 or 32 hex>,"
                    + " lower case, at most 223 bytes");

    /**
     * NVMe qualified names (NVMe Base 4.5): {@code nqn.YYYY-MM.reversed.domain:name}, the UUID form
     * ({@code nqn.2014-08.org.nvmexpress:uuid:...}) among them; printable ASCII without ',' and '=' (the fabrics
     * options string's separators); at most 223 bytes.
     */
    public static final Format NQN = new Format("nqn", "an NVMe qualified name",
            "nqn\\.[0-9]{4}-[0-9]{2}\\.[A-Za-z0-9][A-Za-z0-9.-]*(:[!-+\\--<>-~]+)?", 223, Optional.empty(), "",
            "nqn.YYYY-MM.reversed.domain:name, printable ASCII without ',' or '=', at most 223 bytes");

    /**
     * A SCSI logical unit's WWID as a user writes it (scsi.Wwid parses it): the kernel's spelling
     * ({@code naa.}, {@code eui.}, {@code t10.}, a SCSI name such as {@code iqn.}), the udev/multipath one (the
     * designator type's digit: {@code 3} NAA, {@code 2} EUI-64, {@code 1} T10, {@code 8} name), or the designator
     * in hex with or without {@code 0x}. NAA and EUI-64 designators have the lengths SPC-4 gives them, so a
     * WWID cut short is refused before anything is attached, not after as a wrong LUN.
     */
    public static final Format WWID = new Format("wwid", "a WWID",
            "(?i:naa)\\.(" + NAA + ")|(?i:eui)\\.(" + EUI + ")|(?i:t10)\\." + TEXT + "|(?i:iqn)\\." + TEXT
                    + "|3(" + NAA + ")|2(" + EUI + ")|1" + TEXT + "|8" + TEXT + "|((?i:0x))?(" + UNTYPED + ")",
            0, Optional.empty(), "", "naa.<hex>, eui.<hex>, t10.<vendor id>, 3<NAA hex> or 2<EUI-64 hex> as"
                    + " multipath writes it, or the designator's hex; NAA: 16 hex digits, 32 for NAA 6 (3600...: 33"
                    + " digits in all); EUI-64: 16, 24 or 32");

    /**
     * A local device's WWID: whatever its sysfs {@code wwid} says (NVMe's {@code nvme.} and {@code uuid.} forms
     * are free text), but one that starts like a SCSI WWID must be one.
     */
    public static final Format DEVICE_WWID = new Format("deviceWwid", "a WWID", WWID.pattern(), 0, Optional.empty(),
            "(?i:naa\\.|eui\\.|0x)|[0-9]", "a SCSI WWID (as for wwid) when it starts with naa., eui., 0x or a digit;"
                    + " else the device's sysfs wwid as it reads (nvme..., uuid....)");

    /** Fibre Channel port names: 16 hex digits, bare, {@code 0x}-prefixed or as eight colon-separated bytes. */
    public static final Format WWPN = new Format("wwpn", "a WWPN",
            "((?i:0x))?(" + HEX + "{16}|" + HEX + "{2}(:" + HEX + "{2}){7})", 0, Optional.empty(), "",
            "16 hex digits: bare, 0x-prefixed or colon-separated bytes");

    /**
     * An iSCSI portal: an IPv4 address or host name with an optional port, an IPv6 address in brackets with an
     * optional port, or a bare IPv6 address (3260 is the default port).
     */
    public static final Format ISCSI_PORTAL = new Format("iscsiPortal", "a portal",
            "([A-Za-z0-9.-]+|\\[" + IPV6 + "\\])(:" + PORT + ")?|" + IPV6, 0, Optional.empty(), "",
            "address[:port], host[:port], [IPv6][:port] or a bare IPv6 address; port 1-65535");

    /**
     * An NVMe/TCP portal: an IP literal (the kernel connects to addresses, it resolves no names) with an optional
     * port, IPv6 in brackets when a port follows. The IPv6 shape only: that it is an address, the platform says.
     */
    public static final Format NVME_PORTAL = new Format("nvmePortal", "a portal",
            "(" + IPV4 + "|\\[" + IPV6 + "\\])(:" + PORT + ")?|" + IPV6, 0, Optional.empty(), "",
            "IPv4[:port], [IPv6][:port] or a bare IPv6 address; port 1-65535; no host names");

    /** An iSCSI LUN: Linux addresses single-level LUNs 0..2^32-1 (SAM allows 64-bit ones, which it folds). */
    public static final Format ISCSI_LUN = new Format("iscsiLun", "a LUN", "[0-9]{1,10}", 0,
            Optional.of(BigInteger.valueOf(0xFFFF_FFFFL)), "", "a decimal number 0..4294967295");

    /** An FC LUN: the kernel's scan attribute takes at most 16 decimal digits. */
    public static final Format FC_LUN = new Format("fcLun", "a LUN", "[0-9]{1,16}", 0, Optional.empty(), "",
            "a decimal number of at most 16 digits");

    /** Every format, in deploy/validate/keyformats.json's order. */
    public static final List<Format> ALL = List.of(ISCSI_NAME, NQN, WWID, DEVICE_WWID, WWPN, ISCSI_PORTAL,
            NVME_PORTAL, ISCSI_LUN, FC_LUN);

    private KeyFormats() {
    }
}
