#!/usr/bin/env bash
# The base root filesystem of blocknode's image, made by mmdebstrap from Debian packages, as an uncompressed
# tarball; prints its path on stdout (what it did goes to stderr). Root.
#
# usage: deploy/image/base.sh [--refresh]
#
# Debian release and mirrors are this machine's own (/etc/os-release, /etc/apt/sources.list.d/debian.sources
# or /etc/apt/sources.list; BASE_SUITE and BASE_SOURCES override them): the plugin's JNI library is compiled
# here, against this machine's glibc, so the image must have the same release's (or a newer one). The tarball
# is cached machine-wide as images/base-HASH.tar (scripts/cache.sh: ~/.cache/blocknode by default), HASH
# covering the suite, the sources, the package list and every mmdebstrap option below, so an unchanged recipe is
# not bootstrapped again. The packages' security
# updates arrive only when the recipe changes or with --refresh.
set -euo pipefail
what="image-base"
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

refresh=false
case ${1:-} in
    "") ;;
    --refresh) refresh=true ;;
    *) fail "usage: deploy/image/base.sh [--refresh]" ;;
esac
require_root

# The tools the plugin runs in its container (see deploy/Containerfile and the DaemonSet's mounts). Probe
# requires blkid (util-linux), mkfs.ext4 (e2fsprogs), mkfs.xfs (xfsprogs); the
# iSCSI and multipath paths run iscsiadm (open-iscsi), multipath and multipathd (multipath-tools), dmsetup,
# and losetup (mount). kmod: modprobe of iscsi_tcp, dm_multipath. procps: ps for an operator.
# cryptsetup-bin: cryptsetup for LUKS2 volumes (docs/design/encryption.md: why the tool, not dm ioctls).
packages=(open-iscsi multipath-tools dmsetup cryptsetup-bin e2fsprogs xfsprogs util-linux mount kmod procps)

suite=${BASE_SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-}")}
[[ -n $suite ]] || fail "no VERSION_CODENAME in /etc/os-release: set BASE_SUITE (e.g. bookworm)"
sources=${BASE_SOURCES:-}
if [[ -z $sources ]]; then
    for candidate in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
        [[ -s $candidate ]] && { sources=$candidate; break; }
    done
fi
[[ -n $sources && -s $sources ]] || fail "no apt sources found: set BASE_SOURCES to a sources.list (one-line or deb822)"

# shellcheck disable=SC2016 # the hook's "$1" (the new root) is for mmdebstrap to expand
options=(
    # Essential:yes packages plus the ones above and their dependencies; no apt in the image.
    --variant=essential
    # merged /usr as Debian 12 has it, by the usr-is-merged package rather than usrmerge (which pulls in perl).
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
    --aptopt='APT::Install-Recommends "false"'
    # No manuals, documentation (copyright files kept), translations; no udev hardware database (only a
    # udevd reads it, and none runs in the container: the host's udev data is mounted at /run/udev).
    --dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/info/*'
    --dpkgopt='path-exclude=/usr/share/doc/*'
    --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-exclude=/usr/share/locale/*'
    --dpkgopt='path-include=/usr/share/locale/locale.alias'
    --dpkgopt='path-exclude=/lib/udev/hwdb.d/*'
    --dpkgopt='path-exclude=/usr/lib/udev/hwdb.d/*'
    # No device nodes in the tarball: a container runtime mounts /dev.
    --skip=output/dev
    # Not this machine's name and resolvers: the runtime mounts its own over these (empty) files.
    --customize-hook='rm -f "$1/etc/hostname" "$1/etc/resolv.conf" "$1/usr/lib/udev/hwdb.bin"; : >"$1/etc/hostname"; : >"$1/etc/resolv.conf"'
    # Nor an initiator name: open-iscsi's postinst makes a random one, and every node running the image would
    # log in as that same IQN if the host's /etc/iscsi were not mounted. Without it, doctor says so instead.
    --customize-hook='rm -f "$1/etc/iscsi/initiatorname.iscsi"'
    # mmdebstrap itself removes apt's lists and caches (cleanup/apt) and the logs that differ between runs.
)

key=$( { printf '%s\n' "$suite" "${packages[@]}" "${options[@]}"; cat "$sources"; } | sha256sum | cut -c1-16)
out=$cache/base-$key.tar
if [[ -s $out ]] && ! $refresh; then
    log "$suite with ${packages[*]}: $out (cached)"
    echo "$out"
    exit 0
fi

ensure_packages "${base_packages[@]}"
mkdir -p "$cache"
log "bootstrapping Debian $suite with ${packages[*]} from $sources"
tmp=$(mktemp --suffix=.tar "$cache/base-$key.XXXXXX")
mmdebstrap_log=$(mktemp)
trap 'rm -f "$tmp" "$mmdebstrap_log"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# mmdebstrap says what it does on stderr: only its warnings and errors are shown, unless it fails.
if ! mmdebstrap "${options[@]}" --include="$(IFS=,; echo "${packages[*]}")" "$suite" "$tmp" "$sources" \
        2>"$mmdebstrap_log"; then
    cat "$mmdebstrap_log" >&2
    fail "mmdebstrap failed"
fi
grep -E '^(W|E): ' "$mmdebstrap_log" >&2 || true
chmod 0644 "$tmp"
mv "$tmp" "$out"
# Only the current recipe's tarball is kept.
for old in "$cache"/base-*.tar; do
    [[ $old == "$out" ]] || rm -f "$old"
done
log "$out ($(du -m "$out" | cut -f1) MiB) in $(elapsed)"
echo "$out"
