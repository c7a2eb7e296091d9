package dev.blocknode.transport.iscsi;

/** One way to a target: its IQN through one portal on one initiator interface (an iSCSI session). */
public record IscsiPath(String iqn, Portal portal, String iface) {

    @Override
    public String toString() {
        return iqn + " via " + portal + " (iface " + iface + ")";
    }
}
