# Shell helpers shared by the sidecar tiers (registration, liveness): their work directory, its cleanup, and
# building and running their Go harness; sourced, never run.

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

# Makes the run's work directory, $work, and starts the wall clock run_harness reports. The name is short on
# purpose: a Unix socket path must be shorter than 108 bytes. On exit the harness's recorded children are
# killed and the directory removed; with keep-if-mounted, a directory with anything mounted under it is
# left for inspection instead, and the run fails.
#   usage: make_work_dir TIER PREFIX [keep-if-mounted]
make_work_dir() {
    tier=$1
    keep_if_mounted=${3:-}
    started=$SECONDS
    work=$(mktemp -d "/tmp/$2.XXXXXX")
    trap remove_work_dir EXIT
    trap 'exit 130' INT TERM
}

remove_work_dir() {
    local rc=$?
    kill_recorded_children "$work" # the harness kills its children itself; this is for a harness killed first
    if [[ -n $keep_if_mounted ]] && findmnt -rn -o TARGET 2>/dev/null | grep -qF "$work"; then
        echo "$tier: something is mounted under $work; leaving it for inspection" >&2
        rc=1
    else
        rm -rf "$work"
    fi
    exit "$rc"
}

# Builds the tier's Go harness (the module in DIR) into $work, runs it with ARGS and -work $work, prints the
# wall time since make_work_dir, and exits with the harness's status.
#   usage: run_harness DIR ARGS...
run_harness() {
    local dir=$1 rc=0
    shift
    (cd "$dir" && go build -o "$work/$tier" .)
    "$work/$tier" "$@" -work "$work" || rc=$?
    echo "$tier test: $((SECONDS - started)) s wall"
    exit "$rc"
}
