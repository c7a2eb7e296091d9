#!/usr/bin/env bash
# jfr-waits.sh FILE.jfr: where a flight recording of the plugin spent its time (guest/san-bench.sh with
# GUEST_SAN_JFR=1 records each stage burst). Prints the recording's summary, its hot methods (CPU samples), and
# the wall-clock waits: every park, sleep and monitor wait or enter the recording kept (the "profile" settings
# keep those of 10 ms and more), summed by the two innermost blocknode frames they waited under, largest first.
# A stage thread's wait for a command shows there under the command runner, its wait for a device under
# DeviceWaiter, a wait for a lock under the lock's holder's caller.
set -euo pipefail
file=${1:?usage: jfr-waits.sh FILE.jfr}
JFR=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}/bin/jfr
echo "== summary"
"$JFR" summary "$file" | sed -n '1,12p'
echo "== hot methods (execution samples)"
"$JFR" view --width 160 hot-methods "$file" | head -n 30
echo "== waits by blocknode frame (events of 10 ms and more: count, total s, longest s, event, frames)"
"$JFR" print --stack-depth 40 --events jdk.ThreadPark,jdk.ThreadSleep,jdk.JavaMonitorWait,jdk.JavaMonitorEnter "$file" |
  awk '
    function seconds(v, u) { return u == "s" ? v : u == "ms" ? v / 1e3 : u == "us" ? v / 1e6 : u == "ns" ? v / 1e9 : u == "min" ? v * 60 : v }
    /^jdk\.[A-Za-z]+ \{/ { type = $1; dur = 0; frames = ""; depth = 0; next }
    /^  duration = / { dur = seconds($3, $4); next }
    /^    [a-z].*\(/ {
      f = $1; sub(/\(.*/, "", f)
      if (f ~ /^dev\.blocknode\./ && depth < 2) { sub(/^dev\.blocknode\./, "", f); frames = frames (depth ? " < " : "") f; depth++ }
      next
    }
    /^\}/ {
      if (frames == "") frames = "(no blocknode frame)"
      k = type " | " frames; n[k]++; t[k] += dur; if (dur > m[k]) m[k] = dur
    }
    END { for (k in n) printf "%6d %9.2f %7.2f  %s\n", n[k], t[k], m[k], k }' | sort -k2,2nr | head -n 40
