package dev.blocknode.transport.iscsi;

import dev.blocknode.transport.KeyedLocks;

/**
 * This node's iSCSI initiator as the transport's parts share it: the kernel's sessions, iscsiadm, the node record
 * files, and the lock of each target and portal that a login, a logout, a scan and a sweep take.
 */
record IscsiInitiator(IscsiSessions sessions, IscsiAdm iscsiadm, NodeRecordFiles records,
                      KeyedLocks<IscsiPath> sessionLocks) {
}
