#!/usr/bin/env bash
# Builds the container runtime the kube tier's node runs (containerd with its runc shim, and runc) from the Go
# module proxy into runtime/containerd-<v>_runc-<v>/bin of the machine-wide cache (scripts/cache.sh: a new clone
# reuses it) and prints that directory on stdout; what it did goes to stderr. A complete build already there is
# reused.
#
# Why not Debian's: bookworm's containerd 1.6 and runc 1.1 cannot id-map a volume's mount into a pod's user
# namespace (hostUsers: false), which needs containerd >= 2.0 and runc >= 1.2 (Kubernetes' user namespaces page).
#
# usage: test-e2e/kube/build-runtime.sh      (versions: versions.txt's containerd and runc entries)
#
# runc links libseccomp with cgo (Debian's libseccomp-dev, installed by deps.sh), as upstream releases it; the
# containerd binaries are static. The version stamps make `containerd --version` and `runc --version` true.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
containerd_version=$(awk '$1 == "containerd" { print $2 }' "$here/versions.txt")
runc_version=$(awk '$1 == "runc" { print $2 }' "$here/versions.txt")
[[ $containerd_version =~ ^v2\.[0-9]+\.[0-9]+$ && $runc_version =~ ^v1\.[0-9]+\.[0-9]+$ ]] ||
    { echo "kube: containerd '$containerd_version' or runc '$runc_version' in versions.txt is not vX.Y.Z" >&2; exit 1; }
commands=(containerd containerd-shim-runc-v2 ctr runc)

source "$here/build-lock.sh"
out=$blocknode_cache/runtime/containerd-${containerd_version}_runc-$runc_version
bin=$out/bin
take_build_lock "$out"
complete() { for c in "${commands[@]}"; do [[ -x $bin/$c ]] || return 1; done; }
if complete; then
    echo "kube: containerd $containerd_version and runc $runc_version present in $bin" >&2
    echo "$bin"
    exit 0
fi

start=$(date +%s)
rm -rf "$out/module" "$bin.partial"
mkdir -p "$out/module" "$bin.partial"
cd "$out/module"
export GOFLAGS="-mod=mod -buildvcs=false"
go mod init blocknode.test/runtime >/dev/null 2>&1
{
    echo "//go:build tools"
    echo
    echo "package tools"
    echo
    echo "import ("
    echo "	_ \"github.com/containerd/containerd/v2/cmd/containerd\""
    echo "	_ \"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2\""
    echo "	_ \"github.com/containerd/containerd/v2/cmd/ctr\""
    echo "	_ \"github.com/opencontainers/runc\""
    echo ")"
} >tools.go
go get "github.com/containerd/containerd/v2@$containerd_version" "github.com/opencontainers/runc@$runc_version" >&2
go mod tidy -e >&2
# Both modules' own go.mod decide their dependencies' minimums; a shared module may be raised by the other, which
# `go version -m` on each binary shows.
cd_ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd_version"
CGO_ENABLED=0 go build -trimpath -ldflags "$cd_ldflags" -tags "no_btrfs no_zfs no_devmapper" -o "$bin.partial/" \
    github.com/containerd/containerd/v2/cmd/containerd \
    github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
    github.com/containerd/containerd/v2/cmd/ctr >&2
CGO_ENABLED=1 go build -trimpath -tags seccomp -ldflags "-s -w -X main.version=${runc_version#v}" \
    -o "$bin.partial/runc" github.com/opencontainers/runc >&2
rm -rf "$bin"
mv "$bin.partial" "$bin"
echo "kube: built containerd $containerd_version and runc $runc_version in $(( $(date +%s) - start )) s into $bin" >&2
echo "$bin"
