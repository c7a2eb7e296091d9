# Shell helpers shared by the sidecar tiers (registration, liveness); sourced, never run.

# Kills, with their process groups, the harness's children recorded in $1/pids: for a harness that was
# killed before it could. A pid is only signalled while its command line still names the run's directory
# $1, so a reused pid is never hit.
kill_recorded_children() {
    local work=$1 pid
    [[ -f $work/pids ]] || return 0
    while read -r pid; do
        if grep -qsF "$work" "/proc/$pid/cmdline" 2>/dev/null; then
            kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
        fi
    done <"$work/pids"
}
