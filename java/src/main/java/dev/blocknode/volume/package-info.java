/**
 * The volume lifecycle behind the CSI node calls, its write side: stage, publish, unpublish, unstage and expand,
 * one operation per volume (OperationGuard), records written before the host changes; and NodeVolumes, the one
 * entry csi and the entry points call, which joins it to the read side (volume.read). Used by csi, repair and the
 * entry points; it may use its sub-packages, state, transport, os and the utilities.
 */
package dev.blocknode.volume;
