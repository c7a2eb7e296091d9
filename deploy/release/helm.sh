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
#
# Linked as Helm's own releases are (its Makefile): with its version string, and with the Kubernetes version that
# helm template and helm lint assume without a cluster set from the client-go that Helm release builds with. A plain
# `go install` leaves that at v1.20, and `helm template` of the chart (kubeVersion >= 1.29) then fails until
# --kube-version is given. Checked on the build: the checkout's chart must render without --kube-version.
set -euo pipefail
what="helm"
# shellcheck source=../image/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../image/lib.sh"

version=$(awk '$1 == "helm.sh/helm/v3" { print $2 }' "$repo/deploy/validate/go.mod")
[[ $version =~ ^v3\.[0-9]+\.[0-9]+$ ]] || fail "deploy/validate/go.mod requires no helm.sh/helm/v3 release (found '${version:-nothing}')"
# (-kube: linked with the Kubernetes version; a binary of an older helm.sh, without it, is not reused.)
bin=$repo/.tools/bin/helm-$version-kube
if [[ ! -x $bin ]]; then
    command -v go >/dev/null || fail "Go is needed to build helm (scripts/build-host.sh release says which)"
    log "building helm $version from the Go module proxy into $bin"
    mkdir -p "$repo/.tools/bin"
    gobin=$(mktemp -d "$repo/.tools/bin/.helm.XXXXXX")
    trap 'rm -rf "$gobin"' EXIT
    # The client-go of that Helm release (its go.mod): v0.X.Y is Kubernetes 1.X, as Helm's Makefile reckons it.
    gomod=$(cd "$gobin" && timeout 600 go mod download -json "helm.sh/helm/v3@$version" |
        sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p') || fail "helm.sh/helm/v3@$version did not download"
    client_go=$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "$gomod")
    [[ $client_go =~ ^v0\.([0-9]+)\. ]] || fail "helm $version's go.mod names no k8s.io/client-go v0.X.Y (found '${client_go:-nothing}')"
    kube_minor=${BASH_REMATCH[1]}
    ldflags="-X helm.sh/helm/v3/internal/version.version=$version"
    for package in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
        ldflags+=" -X $package.k8sVersionMajor=1 -X $package.k8sVersionMinor=$kube_minor"
    done
    (GOBIN=$gobin GOFLAGS=-mod=mod timeout 1200 go install -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$version") >&2 ||
        fail "helm $version did not build"
    # -X names variables by their path: one Helm renamed would be set silently to nothing.
    "$gobin/helm" template blocknode "$repo/deploy/helm/blocknode" >/dev/null 2>"$gobin/template.log" || {
        cat "$gobin/template.log" >&2
        fail "helm $version, linked for Kubernetes 1.$kube_minor, does not render the chart without --kube-version"
    }
    mv "$gobin/helm" "$bin"
    log "helm $version (Kubernetes 1.$kube_minor by default): $bin"
fi
echo "$bin"
