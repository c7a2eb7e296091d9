#!/usr/bin/env bash
# Gets one upstream CSI sidecar binary for the tests and prints its path on stdout (one line); what it did
# goes to stderr. The versions and checksums are in versions.txt beside this script.
#
# usage: test-e2e/sidecars/get.sh NAME        (csi-node-driver-registrar, livenessprobe, csi-attacher
#                                                 or hostpathplugin, the reference driver of make bench)
#
# Where ../shared/tools exists (beside the repository: SHARED_TOOLS overrides it), NAME.xz there is
# unpacked into .tools/bin/NAME-VERSION and its sha256 must equal the one in versions.txt, or this fails
# (exit 1) and leaves nothing behind. A binary already unpacked is checked again on every call.
# Only where ../shared/tools is absent is NAME built from the Go module proxy at the same upstream commit,
# into .tools/bin/NAME-COMMIT-goproxy. That build is checked by Go's go.sum machinery, not by the sha256
# above (another compiler or flags give other bytes), and says so.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
tools=$repo/.tools/bin
shared=${SHARED_TOOLS:-$repo/../shared/tools}
name=${1:?usage: get.sh NAME}

fail() { echo "sidecars: $name: $*" >&2; exit 1; }

read -r version sha256 commit < <(awk -v n="$name" '$1 == n { print $2, $3, $4 }' "$here/versions.txt") ||
    fail "not listed in $here/versions.txt"
case $name in
    csi-node-driver-registrar) module=github.com/kubernetes-csi/node-driver-registrar ;;
    livenessprobe)             module=github.com/kubernetes-csi/livenessprobe ;;
    csi-attacher)              module=github.com/kubernetes-csi/external-attacher ;;
    hostpathplugin)            module=github.com/kubernetes-csi/csi-driver-host-path ;;
    *)                         fail "no upstream module known for it" ;;
esac
mkdir -p "$tools"

sum() { sha256sum "$1" | cut -d' ' -f1; }

if [[ -d $shared ]]; then
    shared=$(cd "$shared" && pwd)
    out=$tools/$name-$version
    if [[ -x $out && $(sum "$out") == "$sha256" ]]; then
        echo "sidecars: $name $version: $out (sha256 $sha256 verified)" >&2
        echo "$out"
        exit 0
    fi
    [[ -f $shared/$name.xz ]] || fail "$shared exists but holds no $name.xz"
    command -v xz >/dev/null || fail "xz is required to unpack $shared/$name.xz (apt-get install xz-utils)"
    tmp=$(mktemp "$out.XXXXXX")
    trap 'rm -f "$tmp"' EXIT
    xz -dc "$shared/$name.xz" >"$tmp"
    got=$(sum "$tmp")
    if [[ $got != "$sha256" ]]; then
        echo "sidecars: $name: CHECKSUM MISMATCH for $shared/$name.xz" >&2
        echo "  unpacked sha256 $got" >&2
        echo "  expected sha256 $sha256 ($version, test-e2e/sidecars/versions.txt)" >&2
        exit 1
    fi
    chmod 0755 "$tmp"
    mv "$tmp" "$out"
    trap - EXIT
    echo "sidecars: $name $version: unpacked $shared/$name.xz into $out (sha256 $sha256 verified)" >&2
    echo "$out"
    exit 0
fi

# No ../shared/tools: build the same commit from the Go module proxy. `go install module@version` refuses
# modules whose go.mod has replace directives (these have), so: download the module's source into the
# module cache, copy it out (the cache is read-only), and build its command there as its own main module.
out=$tools/$name-${commit:0:12}-goproxy
if [[ -x $out ]]; then
    echo "sidecars: $name $version: $out (built earlier from the Go module proxy; not the shared/tools binary)" >&2
    echo "$out"
    exit 0
fi
command -v go >/dev/null || fail "no $shared, and go is required to build $name from the Go module proxy"
echo "sidecars: $name: no $shared; building $module@$commit ($version) from the Go module proxy" >&2
work=$(mktemp -d /tmp/bn-sidecar.XXXXXX)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
began=$SECONDS
json=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "$module@$commit" 2>&1) || true
dir=$(sed -n 's/^\t"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
if [[ -z $dir ]]; then
    error=$(sed -n 's/^\t"Error": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
    echo "sidecars: $name: cannot get $module@$commit from the Go module proxy:" >&2
    printf '  %b\n' "${error:-$json}" >&2
    echo "  Put the shared tools beside the repository (../shared/tools/$name.xz) or set SHARED_TOOLS." >&2
    exit 1
fi
cp -r "$dir" "$work/src"
chmod -R u+w "$work/src"
(cd "$work/src" && GOFLAGS="$(go env GOFLAGS) -mod=mod" CGO_ENABLED=0 \
    go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$out.tmp" "./cmd/$name") >&2
mv "$out.tmp" "$out"
echo "sidecars: $name $version: built $out from the Go module proxy in $((SECONDS - began)) s (sha256 $(sum "$out"); not comparable with versions.txt)" >&2
echo "$out"
