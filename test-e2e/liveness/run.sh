#!/usr/bin/env bash
# The plugin's health as kubelet sees it: blocknode beside the real livenessprobe sidecar, /healthz while the
# plugin is healthy, gone, not ready (a host tool missing) and back (see README.md). Root: the not-ready
# plugin runs in a mount namespace of its own with the tool covered.
#
# usage: test-e2e/liveness/run.sh [PLUGIN_JAR]      (default java/target/blocknode.jar)
#
# environment:
#   JAVA           java executable (default: the newest JDK >= 21, via scripts/find-jdk.sh)
#   LIVENESSPROBE  a livenessprobe executable to use as it is. Default: the upstream binary from
#                  ../shared/tools, unpacked and checked against its sha256 by test-e2e/sidecars/get.sh
#                  (built from the Go module proxy only where ../shared/tools is absent). Without one the
#                  test fails.
#   SHARED_TOOLS   where the upstream binaries are (default: ../shared/tools beside the repository)
#   LIVENESS_LOAD  a duration (e.g. 30s): also time /healthz for that long with every core busy
#   LIVENESS_HOGS  with LIVENESS_LOAD: how many busy-looping processes (default: one per core)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
plugin_jar=$(realpath -m "${1:-$repo/java/target/blocknode.jar}")
daemonset=$repo/deploy/kubernetes/daemonset.yaml

die() { echo "liveness: $*" >&2; echo "liveness: 0 passed, 1 failed"; exit 1; }

[[ -f $plugin_jar ]] || die "no plugin jar at $plugin_jar; build it first (make build)"
command -v go >/dev/null || die "go is required (apt-get install golang-go, or make deps)"
((EUID == 0)) || die "root is required (the not-ready plugin runs in its own mount namespace)"
if [[ -z ${JAVA:-} ]]; then
    java_home=$("$repo/scripts/find-jdk.sh") || die "no JDK >= 21 found"
    JAVA=$java_home/bin/java
fi
[[ -x $JAVA ]] || die "no java at $JAVA"

# livenessprobe runs with the DaemonSet's --probe-timeout, and each GET of /healthz with the plugin
# container's livenessProbe timeoutSeconds, so the test checks the values that are deployed.
probe_timeout=$(grep -o -- '--probe-timeout=[0-9.a-z]*' "$daemonset" | cut -d= -f2)
http_timeout=$(awk '/^        - name: / { c = $3 } c == "blocknode" && /timeoutSeconds:/ { print $2 "s"; exit }' "$daemonset")
[[ -n $probe_timeout && -n $http_timeout ]] ||
    die "cannot read --probe-timeout and the plugin's livenessProbe timeoutSeconds from $daemonset"

case ${LIVENESSPROBE:-} in
    "")
        livenessprobe=$("$repo/test-e2e/sidecars/get.sh" livenessprobe) ||
            die "no livenessprobe to run: test-e2e/sidecars/get.sh failed (see above)"
        # livenessprobe has no --version: versions.txt names the build whose sha256 get.sh verified.
        version=$(awk '$1 == "livenessprobe" { print $2 }' "$repo/test-e2e/sidecars/versions.txt")
        [[ $livenessprobe == *-goproxy ]] && version+=" (built from the Go module proxy)"
        ;;
    *)
        livenessprobe=$(realpath -m "$LIVENESSPROBE")
        [[ -x $livenessprobe ]] || die "LIVENESSPROBE=$LIVENESSPROBE is not an executable"
        version="unknown (LIVENESSPROBE given)"
        ;;
esac
label="livenessprobe $version ($livenessprobe, sha256 $(sha256sum "$livenessprobe" | cut -d' ' -f1))"

# shellcheck source=../sidecars/lib.sh
source "$repo/test-e2e/sidecars/lib.sh"
make_work_dir liveness bn-live

run_harness "$here" -java "$JAVA" -jar "$plugin_jar" -livenessprobe "$livenessprobe" -livenessprobe-label "$label" \
    -probe-timeout "$probe_timeout" -http-timeout "$http_timeout" -load "${LIVENESS_LOAD:-0}" \
    ${LIVENESS_HOGS:+-hogs "$LIVENESS_HOGS"}
