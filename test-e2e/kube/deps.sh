#!/usr/bin/env bash
# Installs, from Debian's packages, what the kube tier's node runs besides Kubernetes itself: containerd and
# runc (the container runtime kubelet drives over CRI), the CNI plugins (bridge, host-local, loopback), etcd
# (the apiserver's store), iptables and conntrack (the bridge plugin and kubelet use them), docker-registry (the
# loopback registry the release is published into: registry.sh), skopeo (make publish's image push) and socat (the second
# node reaches that registry through it: node-b.sh). Only what is
# missing is installed; versions are Debian bookworm's (containerd 1.6, runc 1.1, etcd 3.4). The node itself runs
# containerd 2 and runc that build-runtime.sh builds (user namespaces need them), for which libseccomp-dev and
# pkg-config are installed here.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# TOOL:PACKAGE, each installed when TOOL (a command, or a file when it starts with /) is missing; scripts/apt.sh
# waits for a dpkg lock another apt holds and starts no service while it installs.
# build-runtime.sh links runc with libseccomp (cgo); gcc is the JNI build's.
bash "$here/../../scripts/apt.sh" ensure containerd:containerd containerd-shim-runc-v2:containerd ctr:containerd \
    runc:runc /usr/lib/cni/bridge:containernetworking-plugins etcd:etcd-server iptables:iptables \
    conntrack:conntrack openssl:openssl curl:curl docker-registry:docker-registry skopeo:skopeo socat:socat \
    pkg-config:pkg-config /usr/include/seccomp.h:libseccomp-dev ||
    { echo "kube: could not install the tier's Debian packages (see above)" >&2; exit 1; }
# The install starts no daemon (scripts/apt.sh blocks services while it installs); the tier starts its own instances
# with their own sockets and directories, so an etcd or containerd already running here is only noted.
for daemon in containerd etcd docker-registry; do
    if pgrep -x "$daemon" >/dev/null; then
        echo "kube: note: a $daemon is already running on this machine; the tier starts its own beside it" >&2
    fi
done
