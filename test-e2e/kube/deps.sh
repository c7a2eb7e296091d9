#!/usr/bin/env bash
# Installs, from Debian's packages, what the kube tier's node runs besides Kubernetes itself: containerd and
# runc (the container runtime kubelet drives over CRI), the CNI plugins (bridge, host-local, loopback), etcd
# (the apiserver's store), iptables and conntrack (the bridge plugin and kubelet use them), docker-registry (the
# loopback registry the release is published into: registry.sh) and skopeo (make publish's image push). Only what is
# missing is installed; versions are Debian bookworm's (containerd 1.6, runc 1.1, etcd 3.4). The node itself runs
# containerd 2 and runc that build-runtime.sh builds (user namespaces need them), for which libseccomp-dev and
# pkg-config are installed here.
set -euo pipefail

missing=()
need() { # command package
    command -v "$1" >/dev/null 2>&1 || [[ -x $1 ]] || missing+=("$2")
}
need containerd containerd
need containerd-shim-runc-v2 containerd
need ctr containerd
need runc runc
need /usr/lib/cni/bridge containernetworking-plugins
need etcd etcd-server
need iptables iptables
need conntrack conntrack
need openssl openssl
need curl curl
need docker-registry docker-registry
need skopeo skopeo
# build-runtime.sh links runc with libseccomp (cgo); gcc is the JNI build's.
need pkg-config pkg-config
[[ -e /usr/include/seccomp.h ]] || missing+=(libseccomp-dev)
if ((${#missing[@]})); then
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
    echo "kube: installing Debian packages: ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's packages would start their daemons where an init system runs; the tier starts its own instances
# with their own sockets and directories, so a packaged etcd or containerd left running is only noted.
for daemon in containerd etcd docker-registry; do
    if pgrep -x "$daemon" >/dev/null; then
        echo "kube: note: a $daemon is already running on this machine; the tier starts its own beside it" >&2
    fi
done
