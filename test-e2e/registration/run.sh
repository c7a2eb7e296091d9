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
#                      Default: the upstream binary from ../shared/tools, unpacked and checked against its
#                      sha256 by test-e2e/sidecars/get.sh (built from the Go module proxy only where
#                      ../shared/tools is absent). Without a registrar the test fails.
#   SHARED_TOOLS       where the upstream binaries are (default: ../shared/tools beside the repository)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
plugin_jar=$(realpath -m "${1:-$repo/java/target/blocknode.jar}")

die() { echo "registration: $*" >&2; exit 2; }

[[ -f $plugin_jar ]] || die "no plugin jar at $plugin_jar; build it first (make build)"
command -v go >/dev/null || die "go is required (apt-get install golang-go, or make deps)"
if [[ -z ${JAVA:-} ]]; then
    java_home=$("$repo/scripts/find-jdk.sh") || die "no JDK >= 21 found"
    JAVA=$java_home/bin/java
fi
[[ -x $JAVA ]] || die "no java at $JAVA"

# The registrar runs with the DaemonSet's --timeout (how long it waits for the plugin's GetPluginInfo before
# it exits), so the test checks the value that is deployed.
daemonset=$repo/deploy/kubernetes/daemonset.yaml
registrar_timeout=$(awk '/^        - name: / { c = $3 } c == "node-driver-registrar" && /- --timeout=/ {
    sub(/.*--timeout=/, ""); print; exit }' "$daemonset")
[[ -n $registrar_timeout ]] || die "cannot read the registrar's --timeout from $daemonset"

# shellcheck source=../sidecars/lib.sh
source "$repo/test-e2e/sidecars/lib.sh"
make_work_dir registration bn-reg keep-if-mounted

# ---------------------------------------------------------------------------------------------- registrar

# No registrar is a failure, never a skip: the closing line says so as the harness's own would.
no_registrar() {
    echo "registration: no node-driver-registrar to run: $*" >&2
    echo "registration: 0 passed, 1 failed"
    exit 1
}

case ${REGISTRAR:-} in
    standin)
        registrar=$work/standin-registrar
        (cd "$here" && go build -o "$registrar" ./standin)
        label="STAND-IN (test-e2e/registration/standin, NOT node-driver-registrar)"
        ;;
    "")
        registrar=$("$repo/test-e2e/sidecars/get.sh" csi-node-driver-registrar) ||
            no_registrar "test-e2e/sidecars/get.sh failed (see above)"
        label="node-driver-registrar $("$registrar" --version 2>&1 | awk '{ print $NF; exit }')"
        label+=" ($registrar, sha256 $(sha256sum "$registrar" | cut -d' ' -f1))"
        ;;
    *)
        registrar=$(realpath -m "$REGISTRAR")
        [[ -x $registrar ]] || no_registrar "REGISTRAR=$REGISTRAR is not an executable"
        label="node-driver-registrar $("$registrar" --version 2>&1 | awk '{ print $NF; exit }')"
        label+=" ($registrar, sha256 $(sha256sum "$registrar" | cut -d' ' -f1))"
        ;;
esac

# ---------------------------------------------------------------------------------------------- the test

run_harness "$here" -java "$JAVA" -jar "$plugin_jar" -registrar "$registrar" -registrar-label "$label" \
    -registrar-timeout "$registrar_timeout"
