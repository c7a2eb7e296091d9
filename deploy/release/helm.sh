#!/usr/bin/env bash
# The helm CLI that make publish pushes the chart with and the Kubernetes tier installs it with, built from the
# Go module proxy into .tools/bin/helm-VERSION and its path printed on stdout (what it did goes to stderr).
# A binary already there is reused.
#
# usage: deploy/release/helm.sh
#
# VERSION is the helm.sh/helm/v3 that deploy/validate's go.mod requires: the CLI and the library that packages,
# lints and renders the chart (make release, make validate-deploy) are one release of Helm, pinned in one place,
# and `go install` checks the module against the checksum database as any module download is.
set -euo pipefail
what="helm"
# shellcheck source=../image/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../image/lib.sh"

version=$(awk '$1 == "helm.sh/helm/v3" { print $2 }' "$repo/deploy/validate/go.mod")
[[ $version =~ ^v3\.[0-9]+\.[0-9]+$ ]] || fail "deploy/validate/go.mod requires no helm.sh/helm/v3 release (found '${version:-nothing}')"
bin=$repo/.tools/bin/helm-$version
if [[ ! -x $bin ]]; then
    command -v go >/dev/null || fail "Go is needed to build helm (make deps installs it)"
    log "building helm $version from the Go module proxy into $bin"
    mkdir -p "$repo/.tools/bin"
    gobin=$(mktemp -d "$repo/.tools/bin/.helm.XXXXXX")
    trap 'rm -rf "$gobin"' EXIT
    # helm's version string is set at link time in its releases; without it, `helm version` says only v3.X.
    (GOBIN=$gobin GOFLAGS=-mod=mod timeout 1200 go install \
        -ldflags "-X helm.sh/helm/v3/internal/version.version=$version" "helm.sh/helm/v3/cmd/helm@$version") >&2 ||
        fail "helm $version did not build"
    mv "$gobin/helm" "$bin"
fi
echo "$bin"
