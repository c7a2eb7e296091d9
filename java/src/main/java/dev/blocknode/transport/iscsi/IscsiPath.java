package dev.blocknode.transport.iscsi;

import dev.blocknode.logging.Printable;
import dev.blocknode.transport.KeyFormats;

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

    /**
     * Whether {@code name} is an iSCSI target name (KeyFormats.ISCSI_NAME, the one format stage, pv and the validator
     * check): it is joined into a path of open-iscsi's database, so it holds no slash, space or control character.
     */
    public static boolean isTargetName(String name) {
        return KeyFormats.ISCSI_NAME.accepts(name);
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
