/**
 * The volume lifecycle behind the CSI node calls: stage, publish, unpublish, unstage, expand, stats and
 * health, one operation per volume, records written before the host changes, paths confined to the kubelet root.
 * Used by csi and the entry points; it may use state, transport, os and the utilities (and, for now, os.natives'
 * exception types).
 */
package dev.blocknode.volume;
