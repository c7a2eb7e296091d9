/**
 * The read side of the volume layer: NodeGetVolumeStats, NodeGetVolumeHealth and NodeGetStorageHealth, the
 * status command's view of the node, the path gauges and each volume's block devices as an info series. It changes
 * nothing and takes no operation guard; what only the write side knows reaches it through FencedVolumes and
 * RecentStageFailures. It may use volume.record, volume.kubelet, volume.request, state, transport, os and the
 * utilities, never the lifecycle above it.
 */
package dev.blocknode.volume.read;
