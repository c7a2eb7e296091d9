# shellcheck shell=bash
# Sourced by the kube tier's build scripts (build-kubernetes.sh, build-runtime.sh, build-previous.sh), which build
# into the machine-wide cache ($blocknode_cache: scripts/cache.sh, sourced here for them).
# shellcheck source=../../scripts/cache.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/cache.sh"

# take_build_lock OUT: one build at a time per output directory OUT. A second caller (the kube tier while make
# test's background build of the same thing runs: prebuild.sh) waits for the first, then finds its result. The lock
# (OUT.lock) is held on a descriptor of this shell until it exits.
take_build_lock() {
    mkdir -p "$(dirname "$1")"
    exec {build_lock}>"$1.lock"
    if ! flock -n "$build_lock"; then
        echo "kube: waiting for another build into $1 (make test's background one: .tools/prebuild.log)" >&2
        flock "$build_lock"
    fi
}
