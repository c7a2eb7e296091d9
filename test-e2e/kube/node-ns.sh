#!/usr/bin/env bash
# The namespaces of the kube tier's second node (node-b.sh), held open by this script: it runs as the first
# process of a mount and a network namespace of their own (unshare -m -n, propagation slave: the host's mounts
# and unmounts reach the node, nothing the node mounts reaches the host), binds the node's own directories over
# the paths the DaemonSet's hostPaths name, then waits. containerd and kubelet of the node enter these
# namespaces (nsenter), so the DaemonSet keeps one spec and each node's plugin finds its own kubelet root and
# state dir at the same path. Stopped with SIGTERM (cluster_down); the namespaces go with the last process in them.
#
# usage: unshare -m -n --propagation slave node-ns.sh WORK NODE_DIR STATE_DIR
set -euo pipefail
WORK=$1 NODE_DIR=$2 STATE_DIR=$3

# The first node's kubelet has made its root a shared mount of its own; this namespace's copy of it (a slave,
# with the first node's pod mounts under it) goes, so that nothing mounted there on the first node reaches this
# one, and a runtime that looks for the mount at the kubelet root finds only this node's.
if mountpoint -q "$WORK/kubelet"; then umount -l "$WORK/kubelet"; fi
# kubelet's root: shared within the node, so what the plugin mounts there (Bidirectional) reaches kubelet and
# the pods' containers of this node, and no further (a slave of the host's, never its peer).
mount --bind "$NODE_DIR/kubelet" "$WORK/kubelet"
mount --make-rshared "$WORK/kubelet"
mount --bind "$NODE_DIR/blocknode-state" "$STATE_DIR"
# kubelet keeps its device-plugin socket in /var/lib/kubelet/device-plugins whatever its --root-dir, and links
# its containers' logs in /var/log/containers: each node has its own, as on two machines.
mount --bind "$NODE_DIR/var-lib-kubelet" /var/lib/kubelet
mount --bind "$NODE_DIR/var-log-containers" /var/log/containers
ip link set lo up
touch "$NODE_DIR/namespaces-ready"
trap 'exit 0' TERM
sleep infinity &
wait
