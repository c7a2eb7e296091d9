#!/usr/bin/env bash
# make test-deps: the Debian packages of every tier make test runs, installed before its first tier (after make deps,
# csi-sanity and promtool, the Makefile's own prerequisites), so that no tier installs anything midway and the
# order of the tiers never changes what a tier finds on the host: the VM tier's (test-e2e/vm/setup.sh: qemu, a
# kernel, open-iscsi, multipath-tools, tgt, udev, ...), the Kubernetes tier's (test-e2e/kube/deps.sh: containerd,
# runc, etcd, docker-registry, skopeo, ...) and the image and release scripts' (deploy/image/deps.sh: buildah,
# mmdebstrap, ...). Each tier's own script still installs what it lacks when it runs alone. Every install goes
# through scripts/apt.sh, which waits for a dpkg lock another apt holds and lets no package start a service; what
# the packages ship as daemons is then looked for, and any running is named. Root.
#
# usage: scripts/test-deps.sh
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
((EUID == 0)) || { echo "test-deps: root is required (apt-get install)" >&2; exit 2; }

# The daemons the packages above ship; make test's host tiers expect none of them started by the install.
DAEMONS=(iscsid tgtd multipathd systemd-udevd udevd containerd etcd docker-registry prometheus)
running() {
    local name pid
    for name in "${DAEMONS[@]}"; do
        for pid in $(pgrep -x "$name"); do echo "$pid"; done
    done | sort -n
}

started=$SECONDS
before=$(running)
bash "$repo/test-e2e/vm/setup.sh"
bash "$repo/test-e2e/kube/deps.sh"
bash "$repo/deploy/image/deps.sh"
# The host tier runs twice (make host, make host-without-san): once on this host with every SAN initiator's tools
# installed, as a node has them (open-iscsi and multipath-tools come with the VM tier's packages; nvme-cli writes
# /etc/nvme/hostnqn and hostid), and once in namespaces where none of them was ever installed (scripts/without-san.sh),
# so that no test's expectation rests on what this host happens to have.
bash "$repo/scripts/apt.sh" ensure iscsiadm:open-iscsi multipath:multipath-tools nvme:nvme-cli
for pid in $(running); do
    if grep -qx "$pid" <<<"$before"; then
        when="running before test-deps began"
    else
        when="started while test-deps ran (scripts/apt.sh blocks services while it installs: see its parent)"
    fi
    echo "test-deps: note: $(cat "/proc/$pid/comm" 2>/dev/null) (pid $pid, parent $(ps -o ppid= -p "$pid" | tr -d ' ')) is running on this host, $when" >&2
done
echo "test-deps: the packages of every tier are installed (scripts/test-deps.sh took $((SECONDS - started)) s)"
