#!/usr/bin/env bash
# The images the Kubernetes test tier runs beside blocknode's, built offline with buildah (FROM scratch + the
# files below), one OCI archive each in .tools/images/. Prints "ARCHIVE REF" per image on stdout; what it
# did goes to stderr. Root. `make test-images` runs it.
#
# usage: deploy/image/test-images.sh
#
#   csi-node-driver-registrar.tar  the upstream sidecar binaries test-e2e/sidecars/get.sh verifies (sha256 in
#   livenessprobe.tar              test-e2e/sidecars/versions.txt), named exactly as deploy/kubernetes/
#   csi-attacher.tar               daemonset.yaml and controller.yaml name the sig-storage images
#                                  (registry.k8s.io/sig-storage/...:vX.Y.Z), so the manifests apply unchanged.
#                                  Built here from the same upstream source as those releases, not pulled:
#                                  see deploy/README.md.
#   pause.tar                      localhost/blocknode-test/pause:1, the pod sandbox: pause.c, gcc -static
#   busybox.tar                    localhost/blocknode-test/busybox:1, Debian's busybox-static with a link
#                                  per applet in /bin, for the test pods
set -euo pipefail
what="test-images"
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
take_lock
ensure_packages "${test_image_packages[@]}"
buildah_storage
work=$store/files
mkdir -p "$work"

# scratch_image REF ENTRYPOINT_JSON CMD_JSON SOURCE_DIR LABEL...: FROM scratch, SOURCE_DIR's contents at /.
scratch_image() {
    local ref=$1 entrypoint=$2 cmd=$3 dir=$4 container
    shift 4
    container=$(bah from scratch)
    bah copy --quiet "$container" "$dir" / >/dev/null
    local config=(--entrypoint "$entrypoint" --cmd "$cmd" --env PATH=/bin)
    local label
    for label in "$@"; do config+=(--label "$label"); done
    bah config "${config[@]}" "$container"
    bah commit --quiet --rm "$container" "$ref" >/dev/null
}

# The sidecars: the names and tags the DaemonSet and the controller's Deployment use; the binary get.sh verified.
for name in csi-node-driver-registrar livenessprobe csi-attacher; do
    refs=$(cat "$repo"/deploy/kubernetes/{daemonset,controller}.yaml | grep -o "image: [^ ]*/$name:[^ ]*" | cut -d' ' -f2 | sort -u)
    [[ -n $refs && $refs != *$'\n'* ]] || fail "deploy/kubernetes/ names no single $name image: ${refs:-none}"
    binary=$("$repo/test-e2e/sidecars/get.sh" "$name") || fail "test-e2e/sidecars/get.sh $name failed"
    read -r version commit < <(awk -v n="$name" '$1 == n { print $2, $4 }' "$repo/test-e2e/sidecars/versions.txt")
    provenance="upstream $version ($commit), sha256-verified against test-e2e/sidecars/versions.txt"
    [[ $binary == *-goproxy ]] && provenance="upstream $commit built here from the Go module proxy (no ../shared/tools)"
    case $name in
        csi-attacher) source=external-attacher ;;
        *)            source=${name#csi-} ;;
    esac
    mkdir -p "$work/$name"
    cp "$binary" "$work/$name/$name"
    chmod 0755 "$work/$name/$name"
    scratch_image "$refs" "[\"/$name\"]" '[]' "$work/$name" \
        "org.opencontainers.image.title=$name" \
        "org.opencontainers.image.version=$version" \
        "org.opencontainers.image.revision=$commit" \
        "org.opencontainers.image.source=https://github.com/kubernetes-csi/$source" \
        "org.opencontainers.image.description=blocknode test image, not the sig-storage release: $provenance"
    push_archive "$refs" "$refs" "$name"
done

# pause: one static binary.
mkdir -p "$work/pause"
gcc -static -Os -s -Wall -Wextra -Werror -o "$work/pause/pause" "$repo/deploy/image/pause.c"
"$work/pause/pause" --version >/dev/null
scratch_image localhost/blocknode-test/pause:1 '["/pause"]' '[]' "$work/pause" \
    "org.opencontainers.image.description=blocknode test tier's pod sandbox (deploy/image/pause.c)"
push_archive localhost/blocknode-test/pause:1 localhost/blocknode-test/pause:1 pause

# busybox: the package's binary, unpacked (not installed on this machine), a link per applet, and /tmp.
debs=$cache/debs
mkdir -p "$debs"
version=$(bash "$repo/scripts/apt.sh" candidate busybox-static) || fail "apt knows no busybox-static"
deb=$(find "$debs" -name "busybox-static_*.deb" | head -n1)
if [[ -z $deb || $(dpkg-deb -f "$deb" Version) != "$version" ]]; then
    rm -f "$debs"/busybox-static_*.deb
    (cd "$debs" && bash "$repo/scripts/apt.sh" download "busybox-static=$version") || fail "could not download busybox-static"
    deb=$(find "$debs" -name "busybox-static_*.deb" | head -n1)
fi
dpkg-deb -x "$deb" "$work/busybox-deb"
root=$work/busybox
mkdir -p "$root/bin" "$root/tmp"
chmod 1777 "$root/tmp"
cp "$work/busybox-deb/bin/busybox" "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
    [[ $applet == busybox ]] || ln -s busybox "$root/bin/$applet"
done
[[ -L $root/bin/sh ]] || fail "busybox-static $version has no sh applet"
scratch_image localhost/blocknode-test/busybox:1 '[]' '["sh"]' "$root" \
    "org.opencontainers.image.version=$version" \
    "org.opencontainers.image.description=blocknode test tier's pod image: Debian's busybox-static $version"
push_archive localhost/blocknode-test/busybox:1 localhost/blocknode-test/busybox:1 busybox
log "done in $(elapsed)"
