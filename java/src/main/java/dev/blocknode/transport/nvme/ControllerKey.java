package dev.blocknode.transport.nvme;

/**
 * What makes an NVMe/TCP controller the one a volume needs, and what the kernel itself refuses to connect
 * twice: the subsystem, the portal and the host that connects. Every volume of a subsystem reached through
 * one portal by one host shares its controller; it is also the lock that serializes connecting and deleting it.
 */
record ControllerKey(String subsystemNqn, NvmePortal portal, String hostNqn) {

    @Override
    public String toString() {
        return subsystemNqn + " at " + portal;
    }
}
