#!/usr/bin/env bash
# Runs a command as on a machine where no SAN initiator was ever set up: no open-iscsi, multipath-tools or nvme-cli
# (their programs, their configuration under /etc), no iSCSI, multipath or NVMe host identity, and no daemon's socket
# within reach. make test installs those packages before its first tier (the VM tier's guests use the host's / as
# their root), so the host tier runs once on a machine that has them and once more through this script, where the
# same machine looks like one that never had them: a test whose expectation depends on what the host happens to have
# installed fails one of the two runs.
#
# Only the command sees the difference, in namespaces of its own, and nothing on the host is changed:
#   - a mount namespace (propagation: slave, so the host's mounts still reach it and its own never leave it), where
#     each hidden name is whited out of its directory by a read-only overlay (a 0/0 character device in the top
#     layer: absent, as if never installed, where an empty file or directory over it would still exist), the
#     directory's own submounts bound back on top; /sys/class/fc_host, when there is one, reads as empty (no HBA);
#   - a network namespace with only its loopback up: abstract Unix sockets (iscsid's @ISCSIADM_ABSTRACT_NAMESPACE,
#     multipathd's @/org/kernel/linux/storage/multipathd) belong to a network namespace, so no daemon is reachable.
# The kernel's own facts (its modules in /sys/module, /dev/nvme-fabrics) are the running kernel's and stay: the tests
# derive what they expect of those from the same files.
#
# usage: scripts/without-san.sh COMMAND [ARG...]   (root)
set -euo pipefail

(($# > 0)) || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
((EUID == 0)) || { echo "without-san: root is required (mount and network namespaces)" >&2; exit 2; }

# What a SAN initiator's packages put on a machine, or an operator writes there for them.
HIDDEN_CONFIG=(/etc/iscsi /etc/multipath /etc/multipath.conf /etc/nvme)
PACKAGES=(open-iscsi multipath-tools nvme-cli)

# The programs the packages installed, wherever dpkg says they are (none when none is installed).
programs() {
    local pkg
    for pkg in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || continue
        dpkg -L "$pkg" | grep -E '^/(usr/)?s?bin/[^/]+$' || true
    done
}

# Inside the namespaces: whiteouts per directory, an overlay over each, then the command.
if [[ ${1:-} == --inside ]]; then
    shift
    # The layers live on a tmpfs of this namespace's own, which its end takes away; never removed file by file, as
    # the bound-back submounts sit beneath it.
    work=$(mktemp -d /tmp/bn-without-san.XXXXXX)
    mount -t tmpfs -o size=1m,mode=0700 without-san "$work"
    trap 'umount --recursive --lazy "$work"; rmdir "$work"' EXIT
    declare -A hide=()
    hidden=()
    for path in "${HIDDEN_CONFIG[@]}" $(programs); do
        [[ -e $path || -L $path ]] || continue
        hidden+=("$path")
        real=$(realpath -s "$path")
        dir=$(realpath "$(dirname "$real")")
        hide[$dir]+=" $(basename "$real")"
    done
    n=0
    for dir in "${!hide[@]}"; do
        n=$((n + 1))
        layer=$work/layer$n
        mkdir -p "$layer"
        for name in ${hide[$dir]}; do mknod "$layer/$name" c 0 0; done
        # The directory's submounts (a container's /etc/hosts, say), to bind back over the overlay.
        mapfile -t submounts < <(awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo)
        if ((${#submounts[@]})); then
            mkdir -p "$work/orig$n"
            mount --rbind "$dir" "$work/orig$n"
        fi
        mount -t overlay "without-san$n" -o "ro,lowerdir=$layer:$dir" "$dir"
        for sub in "${submounts[@]}"; do
            [[ -e $sub ]] && mount --rbind "$work/orig$n${sub#"$dir"}" "$sub"
        done
    done
    if [[ -d /sys/class/fc_host ]]; then
        mount -t tmpfs -o ro,size=4k,mode=0755 without-san-fc /sys/class/fc_host
        hidden+=(/sys/class/fc_host)
    fi
    ip link set lo up
    echo "without-san: hidden: ${hidden[*]:-nothing of a SAN was here}; and every daemon's abstract socket (a" \
         "network namespace of its own)" >&2
    "$@"
    exit
fi

exec unshare --mount --propagation slave --net -- "$0" --inside "$@"
