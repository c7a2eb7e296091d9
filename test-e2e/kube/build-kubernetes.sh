#!/usr/bin/env bash
# Builds the Kubernetes binaries the kube tier runs (kube-apiserver, kube-controller-manager, kube-scheduler,
# kubelet, kubectl) from the Go module proxy into kubernetes/<version>/bin of the machine-wide cache (scripts/cache.sh:
# a new clone, as CI's, reuses it instead of linking them again) and prints that directory on stdout; what it did
# goes to stderr. A complete build already there is reused.
#
# usage: test-e2e/kube/build-kubernetes.sh [VERSION [COMMAND...]]   (VERSION default: KUBE_VERSION, else versions.txt's
#                                                                    kubernetes entry; COMMAND default: all five)
# Some commands only (node B's kubelet at another version: `build-kubernetes.sh v1.34.4 kubelet`) are built into a
# directory of their own, kubernetes/<version>-<commands>.
#
# Why a scratch module: k8s.io/kubernetes's go.mod points its staging modules (k8s.io/api, client-go, ...)
# at ./staging directories that its module zip does not contain. A module of our own requires
# k8s.io/kubernetes at VERSION and pins every staging module to the release published with it (v0.X.Y for
# v1.X.Y); those are the same sources, released from the same tag.
#
# One `go build` for all five commands: they share most packages, and one invocation compiles each package
# once with both cores busy. The Go build cache (GOCACHE) makes a rebuild seconds; a cold build is the
# longest step of the tier (see test-e2e/kube/README.md for measured times).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=${1:-${KUBE_VERSION:-$(awk '$1 == "kubernetes" { print $2 }' "$here/versions.txt")}}
[[ $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "kube: version '$version' is not v1.MINOR.PATCH" >&2; exit 1; }
minor=${BASH_REMATCH[1]}
staging=v0.$minor.${BASH_REMATCH[2]}
all=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
commands=("${@:2}")
for c in "${commands[@]}"; do
    [[ " ${all[*]} " == *" $c "* ]] || { echo "kube: '$c' is none of ${all[*]}" >&2; exit 1; }
done

source "$here/build-lock.sh"
out=$blocknode_cache/kubernetes/$version
if ((${#commands[@]})); then
    # The full build of that version has them (node B's kubelet at the cluster's version: no skew): no second build.
    have=yes
    for c in "${commands[@]}"; do [[ -x $out/bin/$c ]] || have=no; done
    if [[ $have == yes ]]; then
        echo "kube: Kubernetes $version ${commands[*]} present in $out/bin" >&2
        echo "$out/bin"
        exit 0
    fi
    out+=-$(IFS=-; echo "${commands[*]}")
else
    commands=("${all[@]}")
fi
bin=$out/bin
take_build_lock "$out"
complete() { for c in "${commands[@]}"; do [[ -x $bin/$c ]] || return 1; done; }
if complete; then
    echo "kube: Kubernetes $version binaries present in $bin" >&2
    echo "$bin"
    exit 0
fi

module=$out/module
mkdir -p "$module"
proxy=$(go env GOPROXY | cut -d, -f1)
[[ $proxy == http* ]] || { echo "kube: GOPROXY '$proxy' is not a proxy URL; the staging list is read from it" >&2; exit 1; }
curl -fsS "$proxy/k8s.io/kubernetes/@v/$version.mod" >"$module/kubernetes.mod"

# The staging modules are the ./staging replacements of upstream's go.mod; pin each published one.
{
    echo "module blocknode.test/kubernetes"
    echo
    echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/').0"
    echo
    echo "require k8s.io/kubernetes $version"
    echo
    echo "replace ("
    sed -n '/^replace (/,/^)/p' "$module/kubernetes.mod" | awk '$2 == "=>" && $3 ~ /^\.\/staging/ { print $1 }' |
        while read -r m; do
            code=$(curl -s -o /dev/null -w '%{http_code}' "$proxy/$m/@v/$staging.info")
            if [[ $code == 200 ]]; then echo "	$m => $m $staging"; else echo "kube: $m $staging not published, skipped" >&2; fi
        done
    echo ")"
} >"$module/go.mod"
{
    echo "//go:build tools"
    echo
    echo "package tools"
    echo
    echo "import ("
    for c in "${commands[@]}"; do echo "	_ \"k8s.io/kubernetes/cmd/$c\""; done
    echo ")"
} >"$module/tools.go"

cd "$module"
export GOFLAGS="-mod=mod -buildvcs=false"
go mod tidy -e >&2
# The version stamps make the node and `kubectl version` report VERSION instead of v0.0.0.
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
done
ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"

start=$(date +%s)
mkdir -p "$bin.partial"
# kubelet links with cgo (as upstream releases it); the others are static.
static=()
for c in "${commands[@]}"; do [[ $c == kubelet ]] || static+=("k8s.io/kubernetes/cmd/$c"); done
((${#static[@]} == 0)) || CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin.partial/" "${static[@]}" >&2
if [[ " ${commands[*]} " == *" kubelet "* ]]; then
    CGO_ENABLED=1 go build -trimpath -ldflags "$ldflags" -o "$bin.partial/" k8s.io/kubernetes/cmd/kubelet >&2
fi
rm -rf "$bin"
mv "$bin.partial" "$bin"
echo "kube: built Kubernetes $version (${commands[*]}) in $(( $(date +%s) - start )) s into $bin" >&2
echo "$bin"
