#!/usr/bin/env bash
# Runs csi-sanity against the blocknode node plugin, once with mount volumes and once with block volumes.
#
#   csi-sanity --csi.endpoint ----------> sanity front ----> blocknode (node plugin, the jar under test)
#              --csi.controllerendpoint -> test controller (loop-device volumes)
#
# The front and the controller are one process, the e2e jar. The class comments of
# dev.blocknode.e2e.SanityFront and dev.blocknode.e2e.controller.TestControllerService say why and what.
#
# usage: test-e2e/sanity/run-sanity.sh [PLUGIN_JAR [E2E_JAR]]
#   PLUGIN_JAR  default java/target/blocknode.jar
#   E2E_JAR     default test-e2e/target/blocknode-e2e.jar
# Both are built beforehand, e.g. mvn -B -pl java,test-e2e -am package -DskipTests.
#
# environment:
#   JAVA            java executable (default $JAVA_HOME/bin/java, else java on PATH)
#   JAVA_OPTS       JVM options for both processes (default --enable-native-access=ALL-UNNAMED)
#   CSI_SANITY      csi-sanity executable (default $(go env GOPATH)/bin/csi-sanity)
#   RESULTS_DIR     JUnit reports, csi-sanity output and process logs (default test-e2e/target/sanity)
#   ACCESS_TYPES    default "mount block"
#   SANITY_TIMEOUT  ginkgo's --ginkgo.timeout per run (default 10m)
#   PLUGIN_ARGS     extra plugin flags, e.g. "--default-fs-type xfs" (csi-sanity's mount volumes name no
#                   fs_type, so this picks the filesystem the mount run formats)
#
# Needs root (loop devices, mounts), losetup, findmnt and python3 (socket probe, JUnit parsing).
# Exits 0 only when every run had no failed test and nothing (mount, loop device) was left behind.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
plugin_jar=$(realpath -m "${1:-$repo/java/target/blocknode.jar}")
e2e_jar=$(realpath -m "${2:-$repo/test-e2e/target/blocknode-e2e.jar}")
if [[ -n ${JAVA_HOME:-} ]]; then java=${JAVA:-$JAVA_HOME/bin/java}; else java=${JAVA:-java}; fi
read -r -a java_opts <<<"${JAVA_OPTS:---enable-native-access=ALL-UNNAMED}"
csi_sanity=${CSI_SANITY:-$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin/csi-sanity}
results=${RESULTS_DIR:-$repo/test-e2e/target/sanity}
read -r -a access_types <<<"${ACCESS_TYPES:-mount block}"
sanity_timeout=${SANITY_TIMEOUT:-10m}
read -r -a plugin_args <<<"${PLUGIN_ARGS:-}"

node_id=sanity-node
volume_size=536870912   # 512 MiB: xfs needs at least 300 MB
start_deadline=60       # seconds for a process to listen
stop_deadline=60        # seconds for a process to exit after SIGTERM

die() { echo "run-sanity: $*" >&2; exit 2; }

[[ $EUID -eq 0 ]] || die "must run as root: it attaches loop devices and mounts filesystems"
[[ -f $plugin_jar ]] || die "no plugin jar at $plugin_jar; build it first"
[[ -f $e2e_jar ]] || die "no e2e jar at $e2e_jar; build it first"
[[ -x $csi_sanity ]] || die "no csi-sanity at $csi_sanity; set CSI_SANITY or go install" \
    "github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@v5.6.0"
command -v "$java" >/dev/null || die "no java at $java; set JAVA or JAVA_HOME"
for tool in python3 losetup findmnt; do
    command -v "$tool" >/dev/null || die "$tool is required"
done

# Short on purpose: a Unix socket path must be shorter than 108 bytes.
root=$(mktemp -d /tmp/bn-sanity.XXXXXX)
kubelet=$root/kubelet
logs=$root/logs
plugin_sock=$root/plugin.sock
controller_sock=$root/controller.sock
front_sock=$root/front.sock
mkdir -p "$kubelet" "$root/state" "$root/work" "$logs" "$results"
rm -f "$results"/junit-*.xml "$results"/sanity-*.log "$results"/skipped-*.txt "$results"/*.process.log

plugin_pid=
e2e_pid=
sanity_pid=
tail_pid=
failed_runs=0
summaries=()
started=$SECONDS

# ---------------------------------------------------------------------------------------------- helpers

# Succeeds when something accepts a connection on the Unix socket $1.
socket_answers() {
    python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(2)
s.connect(sys.argv[1])
s.close()' "$1" 2>/dev/null
}

# wait_for_socket SOCKET PID NAME LOG: until the socket exists and accepts a connection, the process
# dies, or the deadline passes.
wait_for_socket() {
    local sock=$1 pid=$2 name=$3 log=$4 deadline=$((SECONDS + start_deadline))
    while true; do
        if [[ -S $sock ]] && socket_answers "$sock"; then
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "run-sanity: $name exited before listening on $sock; its log ends:" >&2
            tail -n 40 "$log" >&2 || true
            return 1
        fi
        if ((SECONDS >= deadline)); then
            echo "run-sanity: $name not listening on $sock after ${start_deadline}s; its log ends:" >&2
            tail -n 40 "$log" >&2 || true
            return 1
        fi
        sleep 0.1
    done
}

# stop_process PID NAME: SIGTERM, then wait up to stop_deadline, then SIGKILL. Never fails.
stop_process() {
    local pid=$1 name=$2 deadline=$((SECONDS + stop_deadline)) rc=0
    [[ -n $pid ]] || return 0
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "run-sanity: $name (pid $pid) still running ${stop_deadline}s after SIGTERM; killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || rc=$?
    # 143 = ended by the SIGTERM we sent, after running its shutdown hooks.
    if ((rc != 0 && rc != 143)); then
        echo "run-sanity: $name exited with status $rc" >&2
    fi
}

leaked_loops() {
    losetup --list --noheadings --raw --output NAME,BACK-FILE \
        | awk -v prefix="$root/" 'index($2, prefix) == 1 { print $1 " " $2 }'
}

leaked_mounts() {
    findmnt --raw --noheadings --output TARGET | awk -v prefix="$root/" 'index($1, prefix) == 1'
}

# summarize TYPE JUNIT: prints "passed failed skipped pending", writes skipped-TYPE.txt (name and reason
# of every skipped or pending spec) and prints each failure's name and first line on stderr.
summarize() {
    python3 "$here/junit-summary.py" "$1" "$2" "$results/skipped-$1.txt"
}

# --------------------------------------------------------------------------------------------- teardown

cleanup() {
    local rc=$? leaked=0 loops mounts
    trap - EXIT INT TERM
    set +e
    # Interrupted mid-run: let csi-sanity clean up its volumes before the servers go away.
    stop_process "$sanity_pid" "csi-sanity"
    [[ -n $tail_pid ]] && kill "$tail_pid" 2>/dev/null
    stop_process "$e2e_pid" "blocknode-e2e"
    stop_process "$plugin_pid" "blocknode"

    loops=$(leaked_loops)
    mounts=$(leaked_mounts)
    if [[ -n $mounts ]]; then
        leaked=1
        echo "run-sanity: LEAK: mounts left under $root:" >&2
        sed 's/^/    /' <<<"$mounts" >&2
        # Deepest first, so that nested mounts come off before their parents.
        sort -r <<<"$mounts" | while read -r target; do
            umount "$target" 2>/dev/null || umount --lazy "$target"
        done
    fi
    if [[ -n $loops ]]; then
        leaked=1
        echo "run-sanity: LEAK: loop devices left backed by files under $root:" >&2
        sed 's/^/    /' <<<"$loops" >&2
        while read -r device _; do
            losetup --detach "$device"
        done <<<"$loops"
    fi
    if ((leaked)); then
        echo "run-sanity: the harness removed those leaks itself; the run still fails" >&2
    fi

    cp "$logs"/*.log "$results"/ 2>/dev/null
    if [[ -z $(leaked_mounts) ]]; then
        rm -rf --one-file-system "$root"
    else
        echo "run-sanity: mounts remain under $root; not removing it" >&2
    fi

    echo
    for line in "${summaries[@]}"; do
        echo "$line"
    done
    echo "results, skip reasons and logs in $results; wall time $((SECONDS - started))s"
    if ((rc == 0 && (failed_runs > 0 || leaked))); then
        rc=1
    fi
    if ((leaked)); then
        echo "sanity: FAILED (resources leaked)"
    elif ((rc != 0)); then
        echo "sanity: FAILED"
    else
        echo "sanity: PASSED"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------------------------------------ start

"$java" "${java_opts[@]}" -jar "$plugin_jar" \
    --endpoint "unix://$plugin_sock" \
    --node-id "$node_id" \
    --kubelet-root "$kubelet" \
    --state-dir "$root/state" \
    --log-format text \
    --shutdown-grace 10s \
    "${plugin_args[@]}" \
    >"$logs/plugin.process.log" 2>&1 &
plugin_pid=$!

"$java" "${java_opts[@]}" -jar "$e2e_jar" \
    --controller-endpoint "unix://$controller_sock" \
    --front-endpoint "unix://$front_sock" \
    --plugin-endpoint "unix://$plugin_sock" \
    --node-id "$node_id" \
    --work-dir "$root/work" \
    >"$logs/e2e.process.log" 2>&1 &
e2e_pid=$!

wait_for_socket "$plugin_sock" "$plugin_pid" "blocknode" "$logs/plugin.process.log"
wait_for_socket "$controller_sock" "$e2e_pid" "blocknode-e2e (controller)" "$logs/e2e.process.log"
wait_for_socket "$front_sock" "$e2e_pid" "blocknode-e2e (front)" "$logs/e2e.process.log"
echo "run-sanity: plugin and e2e tier listening under $root"

# -------------------------------------------------------------------------------------------------- run

for access_type in "${access_types[@]}"; do
    # csi-sanity creates (os.Mkdir) and removes these two per test; their parent must exist.
    mkdir -p "$kubelet/$access_type"
    junit=$results/junit-$access_type.xml
    echo "run-sanity: csi-sanity, ${access_type} volumes"
    rc=0
    # In the background, so that a SIGINT/SIGTERM to this script is handled at once (bash defers traps
    # while a foreground command runs): cleanup then interrupts csi-sanity, which runs its own cleanups.
    "$csi_sanity" \
        --csi.endpoint "unix://$front_sock" \
        --csi.controllerendpoint "unix://$controller_sock" \
        --csi.mountdir "$kubelet/$access_type/target" \
        --csi.stagingdir "$kubelet/$access_type/staging" \
        --csi.testvolumeaccesstype="$access_type" \
        --csi.testvolumesize="$volume_size" \
        --ginkgo.junit-report="$junit" \
        --ginkgo.timeout="$sanity_timeout" \
        --ginkgo.no-color \
        >"$logs/sanity-$access_type.log" 2>&1 &
    sanity_pid=$!
    tail --follow --sleep-interval=0.2 --pid="$sanity_pid" --lines=+1 "$logs/sanity-$access_type.log" &
    tail_pid=$!
    wait "$sanity_pid" || rc=$?
    sanity_pid=
    wait "$tail_pid" || true
    tail_pid=
    if [[ -s $junit ]] && counts=$(summarize "$access_type" "$junit"); then
        read -r passed failed skipped pending <<<"$counts"
        # One word and a colon before the counts: the closing-line form CI tools read.
        summaries+=("sanity-$access_type: $passed passed, $failed failed, $skipped skipped")
        ((pending == 0)) || summaries+=("  ($pending pending: disabled in csi-sanity itself)")
        if ((failed > 0 || rc != 0)); then
            failed_runs=$((failed_runs + 1))
        fi
    else
        summaries+=("sanity-$access_type: no JUnit report (csi-sanity exited $rc)")
        failed_runs=$((failed_runs + 1))
    fi
    if ! kill -0 "$plugin_pid" 2>/dev/null || ! kill -0 "$e2e_pid" 2>/dev/null; then
        echo "run-sanity: a process died during the $access_type run; stopping" >&2
        failed_runs=$((failed_runs + 1))
        break
    fi
done
