package dev.blocknode.transport.iscsi;

/** One way to a target: its IQN through one portal on one initiator interface (an iSCSI session). */
public record IscsiPath(String iqn, Portal portal, String iface) {

    /** open-iscsi's interface for a session that leaves by the node's routing table, bound to no NIC or address. */
    public static final String DEFAULT_IFACE = "default";

    @Override
    public String toString() {
        return iqn + " via " + portal + " (iface " + iface + ")";
    }
}
