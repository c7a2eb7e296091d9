/**
 * kubelet's directories as the volume layer sees them: KubeletPaths confines every path a call names to the kubelet
 * root and opens it beneath it by descriptor; KubeletPods reads a publication target's pod and whether that pod is
 * gone; KubeletPvNames reads the PV's name where kubelet's paths hold it (for metrics only). Part of the volume
 * layer; it may use os and the utilities.
 */
package dev.blocknode.volume.kubelet;
