package dev.blocknode.transport.iscsi;

import dev.blocknode.logging.Printable;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * One way to a target: its IQN through one portal on one initiator interface (an iSCSI session). Every field is
 * checked by its format when the path is made, wherever it was read (a volume's context, a staging record, a journal
 * entry): the IQN is joined into a path of open-iscsi's database and, with the iface, handed to iscsiadm, so a value
 * that is not an iSCSI name or an interface name never gets that far.
 */
public record IscsiPath(String iqn, Portal portal, String iface) {

    /** open-iscsi's interface for a session that leaves by the node's routing table, bound to no NIC or address. */
    public static final String DEFAULT_IFACE = "default";

    /** RFC 3720's longest iSCSI name. */
    static final int MAX_NAME = 223;

    /**
     * iqn.YYYY-MM.reversed.domain[:anything], eui.<16 hex>, naa.<16 or 32 hex> (RFC 3720 names). What follows an
     * IQN's colon is the naming authority's, and targets in the field use more than RFC 3722's characters there
     * (upper case, underscores); it may hold no slash (open-iscsi makes the name a directory of its database), and no
     * space, control, formatting or separator character.
     */
    private static final Pattern TARGET_NAME = Pattern.compile("iqn\\.\\d{4}-\\d{2}\\.[a-z0-9][a-z0-9.-]*"
            + "(:[^/\\s\\p{C}\\p{Z}]+)?|eui\\.[0-9a-f]{16}|naa\\.([0-9a-f]{16}|[0-9a-f]{32})");
    /** open-iscsi's interface names: a file of its ifaces directory, so never "." or "..". */
    private static final Pattern IFACE_NAME = Pattern.compile("(?!\\.{1,2}$)[A-Za-z0-9._-]{1,64}");

    /** @throws IllegalArgumentException when the IQN is not an iSCSI name or the iface not an interface name */
    public IscsiPath {
        Objects.requireNonNull(portal, "portal");
        if (!isTargetName(iqn)) {
            throw new IllegalArgumentException("\"" + Printable.bounded(iqn, 80) + "\" is not an iSCSI name");
        }
        if (!isIfaceName(iface)) {
            throw new IllegalArgumentException("\"" + Printable.bounded(iface, 80)
                    + "\" is not an open-iscsi interface name");
        }
    }

    /** Whether {@code name} is an iSCSI target name (already in lower case where RFC 3720 wants it). */
    public static boolean isTargetName(String name) {
        return name.length() <= MAX_NAME && TARGET_NAME.matcher(name).matches();
    }

    /** Whether {@code name} is an open-iscsi interface name. */
    public static boolean isIfaceName(String name) {
        return IFACE_NAME.matcher(name).matches();
    }

    @Override
    public String toString() {
        return iqn + " via " + portal + " (iface " + iface + ")";
    }
}
