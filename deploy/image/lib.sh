# shellcheck shell=bash
# Shared by the image scripts in deploy/image/ (sourced, not run). Callers set `what` (their log prefix)
# and `set -euo pipefail` themselves.
#
# What depends on the checkout is built under .tools/images/ in the repository: the OCI archives, the build context
# of the blocknode image (context/), and, while a build runs, buildah's storage (tmp.*/, removed at exit with every
# container and image in it). What does not is cached machine-wide, in $cache (scripts/cache.sh): the base root
# filesystem, the Java runtime, the source image's Debian root and its builder's package caches, each keyed by its
# recipe.

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
images=$repo/.tools/images
# shellcheck source=../../scripts/cache.sh
source "$repo/scripts/cache.sh"
cache=$blocknode_cache/images

# shellcheck disable=SC2154 # what: set by the caller
log() { echo "$what: $*" >&2; }
fail() { echo "$what: $*" >&2; exit 1; }

# Seconds since `began`, for the log.
began=$SECONDS
elapsed() { echo "$((SECONDS - began)) s"; }

require_root() {
    ((EUID == 0)) || fail "root is required (buildah's storage and chroot, mmdebstrap's root mode), as for make test"
}

# What each script here and in deploy/release/ installs when it is missing, as TOOL:PACKAGE (ensure_packages), in
# one place: deps.sh installs them all up front for make test (make test-deps).
# shellcheck disable=SC2034 # read by the scripts that source this file
{
    base_packages=(mmdebstrap:mmdebstrap)                                # base.sh
    context_packages=(unzip:unzip)                                       # build.sh, also --context-only
    build_packages=(buildah:buildah)                                     # build.sh
    source_packages=(buildah:buildah mmdebstrap:mmdebstrap unzip:unzip)  # build-from-source.sh
    check_packages=(containerd:containerd ctr:containerd runc:runc curl:curl) # check.sh
    publish_packages=(skopeo:skopeo)                                     # ../release/publish.sh
    # ../release/publish-check.sh (the release tier): a registry on loopback, and ss to find its port
    publish_check_packages=(docker-registry:docker-registry skopeo:skopeo ss:iproute2 curl:curl)
    # test-images.sh
    test_image_packages=(buildah:buildah gcc:gcc /usr/lib/x86_64-linux-gnu/libc.a:libc6-dev xz:xz-utils)
}

# ensure_packages TOOL:PACKAGE...: install the packages of the tools that are missing, and only those, through
# scripts/apt.sh (as the Makefile's deps target does). A TOOL that starts with / is a file, not a command.
ensure_packages() {
    bash "$repo/scripts/apt.sh" ensure "$@" || fail "could not install the Debian packages of: $*"
}

# One image build at a time on the machine: the builds of a checkout share its context/, and every checkout's share
# the machine-wide cache.
take_lock() {
    mkdir -p "$images" "$cache"
    exec {lock_fd}>"$cache/.lock"
    if ! flock -n "$lock_fd"; then
        log "waiting for another image build on this machine to finish"
        flock "$lock_fd"
    fi
}

# A private buildah storage (vfs: plain directories, nothing mounted), removed with everything in it when the
# script exits, however it exits. `bah` runs buildah against it.
buildah_storage() {
    store=$(mktemp -d "$images/tmp.XXXXXX")
    mkdir -p "$store/tmp"
    # buildah 1.28 keeps a blob-info cache in /var/lib/containers/cache whatever --root says; a machine that
    # had no /var/lib/containers before the build has none after it.
    [[ -e /var/lib/containers ]] && had_containers_dir=true || had_containers_dir=false
    # buildah writes temporary blobs (compressed layers on push) under TMPDIR: keep them in the store too.
    export TMPDIR=$store/tmp
    trap remove_buildah_storage EXIT
    # A signal ends the script through its EXIT trap too (bash runs it on exit, not on death by a signal).
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

bah() {
    buildah --root "$store/root" --runroot "$store/run" --storage-driver vfs "$@"
}

remove_buildah_storage() {
    local rc=$?
    if [[ -n ${store:-} && -d $store ]]; then
        bah rm --all >/dev/null 2>&1 || true
        bah rmi --all --force >/dev/null 2>&1 || true
        # vfs mounts nothing and RUN's chroot mounts live in a mount namespace of their own, but never
        # delete through a mount point.
        if grep -q " $store/" /proc/self/mounts; then
            log "left mounted under $store (not removed): $(grep " $store/" /proc/self/mounts | cut -d' ' -f2 | tr '\n' ' ')"
            rc=1
        else
            rm -rf "$store"
        fi
        if [[ $had_containers_dir == false ]]; then
            rm -f /var/lib/containers/cache/blob-info-cache-v1.boltdb
            rmdir /var/lib/containers/cache /var/lib/containers 2>/dev/null || true
        fi
    fi
    exit "$rc"
}

# source_url: the org.opencontainers.image.source label's value, the public address of the checkout's source:
# BLOCKNODE_SOURCE_URL, else the git remote origin's URL when it is an http(s) URL, with any user or token in it
# taken out. Nothing (the label is left out) for a clone whose origin is a local path or an ssh address, which
# would only name the build machine's disk, or a login, to whoever pulls the image.
source_url() {
    local url=${BLOCKNODE_SOURCE_URL:-$(git -C "$repo" remote get-url origin 2>/dev/null || true)}
    if [[ $url =~ ^(https?)://([^/@]*@)?([A-Za-z0-9.-]+(:[0-9]+)?)(/[^[:space:]]*)?$ ]]; then
        echo "${BASH_REMATCH[1]}://${BASH_REMATCH[3]}${BASH_REMATCH[5]}"
    elif [[ -n ${BLOCKNODE_SOURCE_URL:-} ]]; then
        fail "BLOCKNODE_SOURCE_URL is not an http(s) URL: $BLOCKNODE_SOURCE_URL"
    fi
}

# A throwaway containerd, Debian's (check_packages installs it), with its own configuration, root, state and socket
# under a directory and its CRI plugin off: the machine's own containerd, if any, is not touched. containerd_up DIR
# starts it there and sets containerd_pid and containerd_sock; ctr_ runs ctr against it in the namespace kubelet's
# images live in (k8s.io); containerd_down DIR stops every task and then containerd, kills its shims, unmounts what
# is left below DIR and removes DIR, and fails when something stays mounted (DIR is then kept).
containerd_pid=""
containerd_sock=""
containerd_up() {
    local dir=$1 _
    containerd_sock=$dir/containerd.sock
    cat >"$dir/config.toml" <<EOF
version = 2
root = "$dir/root"
state = "$dir/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$containerd_sock"
[ttrpc]
  address = "$containerd_sock.ttrpc"
EOF
    containerd --config "$dir/config.toml" >"$dir/containerd.log" 2>&1 &
    containerd_pid=$!
    for _ in $(seq 100); do
        ctr --address "$containerd_sock" version >/dev/null 2>&1 && break
        sleep 0.1
    done
    ctr --address "$containerd_sock" version >/dev/null || { cat "$dir/containerd.log" >&2; fail "containerd did not start"; }
    log "containerd $(containerd --version | cut -d' ' -f3) on $containerd_sock"
}

ctr_() { ctr --address "$containerd_sock" --namespace k8s.io "$@"; }

containerd_down() {
    local dir=$1 id pid mounts
    if [[ -n $containerd_pid ]]; then
        for id in $(ctr_ containers list -q 2>/dev/null); do
            ctr_ tasks kill --signal SIGKILL "$id" >/dev/null 2>&1 || true
            ctr_ tasks delete --force "$id" >/dev/null 2>&1 || true
            ctr_ containers delete "$id" >/dev/null 2>&1 || true
        done
        kill -TERM "$containerd_pid" 2>/dev/null || true
        wait "$containerd_pid" 2>/dev/null || true
        containerd_pid=""
    fi
    # The shims of this containerd name its socket on their command line; kill any left by pid.
    if [[ -n $containerd_sock ]]; then
        for pid in $(pgrep -f -- "containerd-shim-runc-v2 .*-address $containerd_sock" || true); do
            kill -KILL "$pid" 2>/dev/null || true
        done
    fi
    # Unmount anything left below the directory (deepest first), then remove it.
    mapfile -t mounts < <(awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r)
    ((${#mounts[@]} == 0)) || umount -l "${mounts[@]}" 2>/dev/null || true
    if awk -v d="$dir/" 'index($2, d) == 1 { found = 1 } END { exit !found }' /proc/self/mounts; then
        log "still mounted below $dir; not removed"
        return 1
    fi
    rm -rf "$dir"
}

# push_archive IMAGE REF NAME: write the image as the OCI archive .tools/images/NAME.tar (NAME an absolute
# path: that file) whose one image is named REF (what `ctr images import` names it), replacing an older one
# only once it is complete; then drop the image from buildah's storage.
push_archive() {
    local image=$1 ref=$2 out=$images/$3.tar
    [[ $3 == /* ]] && out=$3
    rm -f "$out.partial"
    bah push --quiet "$image" "oci-archive:$out.partial:$ref" >&2
    mv "$out.partial" "$out"
    bah rmi --force "$image" >/dev/null
    log "$ref -> $out ($(du -m "$out" | cut -f1) MiB)"
    printf '%s %s\n' "$out" "$ref"
}
