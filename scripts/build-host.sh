#!/usr/bin/env bash
# Whether this machine has the toolchain an image or a release is built with, checked before anything is built or
# installed: `make image` and `make release` run it first (and deploy/release/release.sh itself). Silent when it
# has; otherwise it says what is missing, exactly what to install and where from, and the route that needs
# neither (deploy/Containerfile.source), and exits 1.
#
#   image     a JDK 25: the image's Java runtime is jlinked from it (deploy/image/jre.sh), and the image's
#             JVM flags (deploy/jvm.args, the AOT cache of deploy/aot-training.sh) are JDK 25's
#   release   the same, and Go at least the version deploy/validate/go.mod names: the validator refuses a
#             version that is not semver, writes the SBOM, packages and lints the chart
#
# A Go older than that but >= 1.21 passes when GOTOOLCHAIN lets it fetch the right toolchain itself (auto, the
# upstream default; Debian's packages set local). docs/install.md, "What a build host needs", says the same.
#
# usage: scripts/build-host.sh image|release
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
what=${1:-}
[[ $what == image || $what == release ]] || { echo "usage: scripts/build-host.sh image|release" >&2; exit 2; }

jdk_min=25
problems=()

# The JDK: find-jdk.sh's own message names what it found.
if ! jdk_problem=$("$repo/scripts/find-jdk.sh" "$jdk_min" 2>&1 >/dev/null); then
    problems+=("a JDK $jdk_min, which the image's Java runtime is jlinked from (its JVM flags are JDK $jdk_min's)."$'\n'"$jdk_problem")
fi

# version_at_least HAVE NEED: whether version HAVE (1.26.0, 1.24) is NEED or later.
version_at_least() {
    [[ $(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1) == "$2" ]]
}

if [[ $what == release ]]; then
    go_mod=$repo/deploy/validate/go.mod
    need=$(awk '$1 == "go" { print $2; exit }' "$go_mod")
    [[ -n $need ]] || { echo "build-host: $go_mod has no go line" >&2; exit 2; }
    install_go="Install Go $need or later: the tarball from https://go.dev/dl/ unpacked into /usr/local/go (then"
    install_go+=$'\n'"PATH=/usr/local/go/bin:\$PATH), or a Go 1.21 or later (Debian's golang-1.2x packages from"
    install_go+=$'\n'"bookworm-backports or trixie) run with GOTOOLCHAIN=auto, which fetches go$need itself from the Go"
    install_go+=$'\n'"module proxy. Debian 12's golang-go is 1.19, too old for either."
    if ! go=$(command -v go); then
        problems+=("Go $need or later (deploy/validate/go.mod), for the validator that writes the SBOM and packages the chart: no go on PATH."$'\n'"$install_go")
    else
        # From / and with GOTOOLCHAIN=local: the go command's own version, without switching to another.
        have=$(cd / && GOTOOLCHAIN=local "$go" version 2>/dev/null | awk '{ print $3 }') || have=""
        have=${have#go}
        toolchain=$(cd / && "$go" env GOTOOLCHAIN 2>/dev/null) || toolchain=""
        if [[ -z $have ]]; then
            problems+=("Go $need or later: $go does not say its version."$'\n'"$install_go")
        elif ! version_at_least "$have" "$need"; then
            if ! version_at_least "$have" 1.21 || [[ $toolchain != *auto ]]; then
                problems+=("Go $need or later (deploy/validate/go.mod), for the validator that writes the SBOM and packages the chart: $go is go$have${toolchain:+ (GOTOOLCHAIN=$toolchain)}."$'\n'"$install_go")
            fi
        fi
    fi
fi

((${#problems[@]} == 0)) && exit 0
{
    echo "build-host: make $what needs on this machine:"
    for problem in "${problems[@]}"; do sed '1s/^/  - /; 2,$s/^/    /' <<<"$problem"; done
    echo "Or build the image alone, on any Linux host with buildah, podman or docker and without either: from"
    echo "deploy/Containerfile.source, whose builder stage has the JDK: make image-from-source (root, buildah), or"
    echo "docker build -f deploy/Containerfile.source --build-arg VERSION=X.Y.Z -t IMAGE . (podman build: add"
    echo "--ignorefile deploy/Containerfile.source.dockerignore). See docs/install.md#what-a-build-host-needs."
} >&2
exit 1
