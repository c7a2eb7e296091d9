# Shell helpers of the kube tier; sourced by run.sh, cluster.sh and the scenarios, never run.
#
# Every process the tier starts is recorded in $WORK/run/<name>.pid and logs to $WORK/logs/<name>.log; all
# state (etcd's data, containerd's root, kubelet's root, the PKI, loop device files) lives under $WORK, a
# short directory under /tmp (socket paths under kubelet's root must stay below the 108-byte limit).

kube_log() { echo "kube: [+$(( $(date +%s) - KUBE_T0 ))s] $*" >&2; }
kube_fail() { echo "kube: FAIL: $*" >&2; exit 1; }

# Runs kubectl as the cluster admin.
kc() { "$KUBE_BIN/kubectl" --kubeconfig "$WORK/pki/admin.kubeconfig" "$@"; }

# Starts a component in its own session (its process group is what stop_component ends) unless running, at this
# shell's niceness also against other sessions (AUTOGROUP_KEEPS_NICE).
start_component() { # name command...
    local name=$1; shift
    if component_running "$name"; then return 0; fi
    setsid bash -c "$AUTOGROUP_KEEPS_NICE"'; exec "$@"' "$name" "$@" >>"$WORK/logs/$name.log" 2>&1 </dev/null &
    echo $! >"$WORK/run/$name.pid"
}

# A new session (setsid) gets a scheduler autogroup of its own, and the kernel weighs autogroups against each other
# whatever the niceness of the processes in them: a component or a build started with setsid beside the VM tier at
# nice 10 would take an equal share of the CPU from its guests, as if at nice 0 (on a fresh 2-core machine the
# first boots then ran 2-3x slower than alone). This snippet, run by a session's leader, gives the session's
# autogroup the leader's niceness; nothing where the kernel has no autogroups (no such file) or at nice 0.
# shellcheck disable=SC2016  # expanded by the shell that runs it
AUTOGROUP_KEEPS_NICE='n=$(nice); [[ $n == 0 || $(cut -d" " -f6 /proc/$$/stat) != "$$" ]] || echo "$n" 2>/dev/null >/proc/$$/autogroup || true'

component_running() { # name
    local pid
    pid=$(cat "$WORK/run/$1.pid" 2>/dev/null) || return 1
    kill -0 "$pid" 2>/dev/null && grep -qsF "$WORK" "/proc/$pid/cmdline"
}

# SIGTERM, up to $2 seconds (default 20) for the process group to go, then SIGKILL. The pid is only
# signalled while its command line still names $WORK, so a reused pid is never hit.
stop_component() { # name [seconds]
    local name=$1 seconds=${2:-20} pid
    pid=$(cat "$WORK/run/$name.pid" 2>/dev/null) || return 0
    if component_running "$name"; then
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
        wait_until "$name to exit" "$seconds" ! kill -0 "$pid" 2>/dev/null ||
            kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$WORK/run/$name.pid"
}

# kill -9 of the component's whole process group, as a crash would.
kill_component() { # name
    local pid
    pid=$(cat "$WORK/run/$1.pid" 2>/dev/null) || return 0
    component_running "$1" && { kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid"; }
    wait_until "$1 to die" 10 ! kill -0 "$pid" 2>/dev/null
    rm -f "$WORK/run/$1.pid"
}

# Polls a condition (a command; a leading ! negates it) every 0.2 s until it holds or $2 seconds pass.
# Returns 1 on timeout, naming what was awaited.
wait_until() { # description seconds command...
    local what=$1 seconds=$2; shift 2
    local deadline=$(( $(date +%s%N) + seconds * 1000000000 ))
    while :; do
        if [[ $1 == '!' ]]; then "${@:2}" >/dev/null 2>&1 || return 0
        else "$@" >/dev/null 2>&1 && return 0; fi
        (( $(date +%s%N) < deadline )) || { echo "kube: gave up after ${seconds}s waiting for $what" >&2; return 1; }
        sleep 0.2
    done
}

# The address kubelet registers the node with: the source address of the default route, else the first
# global IPv4 address. kubelet refuses a loopback node IP.
node_ip() {
    local ip
    ip=$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "src") print $(i + 1) }')
    [[ -n $ip ]] || ip=$(ip -4 -o addr show scope global | awk '{ sub("/.*", "", $4); print $4; exit }')
    [[ -n $ip ]] || kube_fail "this machine has no global IPv4 address for the node"
    echo "$ip"
}

# node_b_version: the version of node B's kubelet: KUBE_NODE_B_VERSION, else versions.txt's kubelet-b (with another
# KUBE_VERSION than versions.txt's: that one, no skew). Kubernetes' version skew policy lets a kubelet be up to three
# minor versions older than kube-apiserver, never newer: anything else is refused here, not left to fail later.
node_b_version() {
    local versions=$repo/test-e2e/kube/versions.txt listed cluster v
    listed=$(awk '$1 == "kubernetes" { print $2 }' "$versions")
    cluster=${KUBE_VERSION:-$listed}
    v=${KUBE_NODE_B_VERSION:-}
    if [[ -z $v && $cluster == "$listed" ]]; then v=$(awk '$1 == "kubelet-b" { print $2 }' "$versions"); fi
    v=${v:-$cluster}
    [[ $v =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || kube_fail "node B's kubelet version '$v' is not v1.MINOR.PATCH"
    local b=${BASH_REMATCH[1]}
    [[ $cluster =~ ^v1\.([0-9]+)\. ]] || kube_fail "the Kubernetes version '$cluster' is not v1.MINOR.PATCH"
    ((b <= BASH_REMATCH[1] && b >= BASH_REMATCH[1] - 3)) ||
        kube_fail "node B's kubelet $v is outside Kubernetes' version skew policy beside a $cluster control plane" \
            "(at most three minor versions older, never newer)"
    echo "$v"
}

# The minor version of the Kubernetes binaries in use (37 for v1.37.2).
kube_minor() { "$KUBE_BIN/kubelet" --version | sed -n 's/^Kubernetes v1\.\([0-9]*\)\..*/\1/p'; }

# A scenario that cannot run against this Kubernetes release says why, and run.sh counts it as skipped.
skip_scenario() { # reason
    kube_log "SKIPPED: $1"
    SCENARIO_SKIPPED=$1
}
