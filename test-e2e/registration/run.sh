#!/usr/bin/env bash
# Kubelet registration with node-driver-registrar: starts blocknode and the registrar, plays kubelet's
# plugin watcher against the registration socket, and checks teardown (see README.md).
#
# usage: test-e2e/registration/run.sh [PLUGIN_JAR]      (default java/target/blocknode.jar)
#
# environment:
#   JAVA               java executable (default: the newest JDK >= 21, via scripts/find-jdk.sh)
#   REGISTRAR          a csi-node-driver-registrar executable to use as it is (e.g. copied out of
#                      registry.k8s.io/sig-storage/csi-node-driver-registrar), or "standin" for the
#                      harness's own stand-in (NOT the real registrar; exercises the harness only).
#                      Default: .tools/bin/csi-node-driver-registrar-$REGISTRAR_VERSION, built from the Go
#                      module proxy when missing.
#   REGISTRAR_VERSION  what to ask the Go module proxy for (default v2.15.0; a commit hash also works
#                      with `go mod download`)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
plugin_jar=$(realpath -m "${1:-$repo/java/target/blocknode.jar}")
registrar_module=github.com/kubernetes-csi/node-driver-registrar
registrar_version=${REGISTRAR_VERSION:-v2.15.0}
tools=$repo/.tools/bin

die() { echo "registration: $*" >&2; exit 2; }

[[ -f $plugin_jar ]] || die "no plugin jar at $plugin_jar; build it first (make build)"
command -v go >/dev/null || die "go is required (apt-get install golang-go, or make deps)"
if [[ -z ${JAVA:-} ]]; then
    java_home=$("$repo/scripts/find-jdk.sh") || die "no JDK >= 21 found"
    JAVA=$java_home/bin/java
fi
[[ -x $JAVA ]] || die "no java at $JAVA"

started=$SECONDS
# Short on purpose: a Unix socket path must be shorter than 108 bytes.
work=$(mktemp -d /tmp/bn-reg.XXXXXX)

cleanup() {
    local rc=$?
    # The harness kills its children itself; this is for a harness that was killed. A pid is only
    # signalled while its command line still names this run's directory (no pid reuse accidents).
    if [[ -f $work/pids ]]; then
        while read -r pid; do
            if grep -qsF "$work" "/proc/$pid/cmdline" 2>/dev/null; then
                kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
            fi
        done <"$work/pids"
    fi
    if findmnt -rn -o TARGET 2>/dev/null | grep -qF "$work"; then
        echo "registration: something is mounted under $work; leaving it for inspection" >&2
        rc=1
    else
        rm -rf "$work"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------------------------- registrar

# Builds node-driver-registrar $registrar_version into $1. `go install module@version` refuses modules
# whose go.mod has replace directives (this one has many), so: download the module's source into the
# module cache, copy it out (the cache is read-only), and build its command there as its own main module.
build_registrar() {
    local out=$1 json dir error began=$SECONDS
    echo "building node-driver-registrar $registrar_version from the Go module proxy"
    json=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "$registrar_module@$registrar_version" 2>&1) || true
    dir=$(sed -n 's/^\t"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
    if [[ -z $dir ]]; then
        error=$(sed -n 's/^\t"Error": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
        echo "registration: cannot get $registrar_module@$registrar_version from the Go module proxy:" >&2
        printf '  %b\n' "${error:-$json}" >&2
        echo "  Set REGISTRAR to a csi-node-driver-registrar binary (e.g. from the" \
             "registry.k8s.io/sig-storage/csi-node-driver-registrar image), or REGISTRAR=standin to" \
             "exercise the harness with its stand-in (which is not the real registrar)." >&2
        return 1
    fi
    rm -rf "$work/registrar-src"
    cp -r "$dir" "$work/registrar-src"
    chmod -R u+w "$work/registrar-src"
    mkdir -p "$(dirname "$out")"
    (cd "$work/registrar-src" && GOFLAGS="$(go env GOFLAGS) -mod=mod" \
        go build -trimpath -ldflags "-X main.version=$registrar_version" -o "$out.tmp" ./cmd/csi-node-driver-registrar)
    mv "$out.tmp" "$out"
    echo "built $out in $((SECONDS - began)) s"
}

case ${REGISTRAR:-} in
    standin)
        registrar=$work/standin-registrar
        (cd "$here" && go build -o "$registrar" ./standin)
        label="STAND-IN (test-e2e/registration/standin, NOT node-driver-registrar)"
        ;;
    "")
        registrar=$tools/csi-node-driver-registrar-$registrar_version
        [[ -x $registrar ]] || build_registrar "$registrar" || exit 2
        label="node-driver-registrar $registrar_version ($registrar)"
        ;;
    *)
        registrar=$(realpath -m "$REGISTRAR")
        [[ -x $registrar ]] || die "REGISTRAR=$REGISTRAR is not an executable"
        label="node-driver-registrar: $registrar ($("$registrar" --version 2>&1 | head -1 || true))"
        ;;
esac

# ---------------------------------------------------------------------------------------------- the test

(cd "$here" && go build -o "$work/registration" .)
rc=0
"$work/registration" -java "$JAVA" -jar "$plugin_jar" -registrar "$registrar" -registrar-label "$label" \
    -work "$work" || rc=$?
echo "registration test: $((SECONDS - started)) s wall"
exit "$rc"
