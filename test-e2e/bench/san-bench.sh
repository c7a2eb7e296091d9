#!/usr/bin/env bash
# make bench-san: figure h (README.md, "Figure h: N LUNs x 2 paths in the VM tier"). Boots one qemu guest
# that runs guest/san-bench.sh for each N of SAN_N, then writes test-e2e/target/bench/san-results.md: the
# conditions (host load before and after, CPU, guest size), one row per N, the plugin's figures beside
# the target alone (its baseline, measured in the same boot just before), and the exponent of the cost
# per volume against N.
#
#   SAN_N="25 50 100" make bench-san      (root; the plugin's jar built)
#   SAN_N= SAN_LUKS_ROUNDS=0 make bench-san              (figure i alone: beside Dell's gobrick)
#   SAN_N= SAN_PEER_N= SAN_BASELINE=no make bench-san    (figure j alone: LUKS2 against plain on one LUN)
#
# Figure i (README.md, "Figure i: beside Dell's gobrick") and figure j (README.md, "Figure j: LUKS2 against plain
# on one LUN") run in the same boot after figure h. Figure j:
# SAN_LUKS_ROUNDS rounds (default 3; 0 skips it), each staging one LUN plain and encrypted, interleaved.
#
# Everything the guest makes lives in its tmpfs overlay and dies with it; the scenario itself checks that
# the node is clean after each drain, and e2e.sh that no qemu of this run is left.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$REPO/test-e2e/target/bench
mkdir -p "$OUT"
# SAN_N empty (set, but to nothing): figure h is not run (figures i and j alone).
export GUEST_SAN_N=${SAN_N-25 50 100 200} GUEST_SAN_BASELINE=${SAN_BASELINE:-yes}
# Figure j (README.md, "Figure j"): SAN_LUKS_ROUNDS rounds of LUKS2 against plain on one LUN (0: not run).
export GUEST_SAN_LUKS_ROUNDS=${SAN_LUKS_ROUNDS:-3}
# Figure h's outage (README.md, "Figure h"): every path cut for SAN_OUTAGE_S seconds while the N volumes are
# published (0: not run); the smoke run of make test holds it 20 s.
export GUEST_SAN_OUTAGE_S=${SAN_OUTAGE_S:-60}
# The repair loop's cost with healthy volumes (README.md, "Figure h"): the plugin's CPU over SAN_IDLE_S seconds idle,
# with no volume and with the N published (0: not measured; the smoke run takes 5 s each). SAN_JFR=1: a flight
# recording of each stage burst and its waits (guest/san-bench.sh, GUEST_SAN_JFR).
export GUEST_SAN_IDLE_S=${SAN_IDLE_S:-60} GUEST_SAN_JFR=${SAN_JFR:-0}
# SAN_WHOLE_WAIT=yes (default): a map left with one path after the stage burst (the guest's udev late with the
# second disk, so multipathd refused it) is waited for, up to 300 s, and reported in the "maps whole" column
# instead of failing the run; no: fail, as the smoke run of make test does.
export GUEST_SAN_WHOLE_WAIT=${SAN_WHOLE_WAIT:-yes}
# SAN_STAGE_RETRY=yes (default): a stage of the burst that failed is called again after kubelet's back-off (500 ms,
# doubling) until all are staged or 300 s have passed; the row says how many calls were made again. no: fail.
export GUEST_SAN_STAGE_RETRY=${SAN_STAGE_RETRY:-yes}
# SAN_MULTIPATHD_V=3: multipathd's own log at that verbosity, into the boot's results (multipathd.log beside
# san-bench/): what it did with each uevent and each "multipathd add path" of the burst.
[[ -z ${SAN_MULTIPATHD_V:-} ]] || export GUEST_MULTIPATHD_V=$SAN_MULTIPATHD_V
# Figure i (README.md, "Figure i"): SAN_PEER_N, its N (blanks between them; empty: not run), SAN_PEER_ROUNDS
# rounds each; SAN_PEER_ARGS, more flags for the harness ("-max-parallel 64": gobrick's default is 5 in flight).
# Its harness (gobrick-attach/: Dell's gobrick, from the module cache or the Go module proxy,
# checked against the committed go.sum) is built here, into test-e2e/target/bench: the guest sees it there
# (its root is the host's /).
export GUEST_SAN_PEER_N=${SAN_PEER_N-8} GUEST_SAN_PEER_ROUNDS=${SAN_PEER_ROUNDS:-3} GUEST_SAN_PEER_ARGS=${SAN_PEER_ARGS:-}
if [[ -n ${GUEST_SAN_PEER_N// /} ]]; then
  command -v go >/dev/null || { echo "san-bench: figure i needs go for its harness (apt-get install golang-go, or make deps)" >&2; exit 2; }
  (cd "$REPO/test-e2e/bench/gobrick-attach" && go build -o "$OUT/gobrick-attach" .)
  export GUEST_SAN_PEER=$OUT/gobrick-attach
fi
# 16 MiB LUNs are sparse files in the guest's tmpfs; ext4 on each writes ~1 MiB. The JVMs and 2N disks'
# udev work need the rest: 2 GiB holds N = 200.
export VM_MEMORY=${VM_MEMORY:-2048}
largest=$(tr ' ' '\n' <<<"$GUEST_SAN_N $GUEST_SAN_PEER_N" | sort -n | tail -n 1)
# Figure i's rounds count three times each (both sides and the target alone), at the same seconds per volume.
total=$(( $(echo $GUEST_SAN_N 0 | tr ' ' '+') + 3 * GUEST_SAN_PEER_ROUNDS * ($(echo $GUEST_SAN_PEER_N 0 | tr ' ' '+')) ))
# Generous bounds, scaled to the volumes (TCG: seconds per volume, the target included): a hang still ends.
# Figure j: under 3 minutes a round (two stages and two restages, 128 MiB of I/O each) on a busy host.
outages=$(( $(wc -w <<<"$GUEST_SAN_N") * (GUEST_SAN_OUTAGE_S + 120 + 2 * GUEST_SAN_IDLE_S) ))
export GUEST_SCENARIO_TIMEOUT=${GUEST_SCENARIO_TIMEOUT:-$((600 + 12 * total + 180 * GUEST_SAN_LUKS_ROUNDS + outages))}
export VM_TIMEOUT=${VM_TIMEOUT:-$((GUEST_SCENARIO_TIMEOUT + 300))}
export GUEST_CSI_TIMEOUT=${GUEST_CSI_TIMEOUT:-$((240 + 3 * ${largest:-0}))}

# SAN_BEFORE_JAR: another build of the plugin (the one before a change) run beside this checkout's, each N
# once with each, in the same boot: a change's before/after.
vm_work=${VM_WORK:-$REPO/test-e2e/target/vm}
[[ -z ${SAN_BEFORE_JAR:-} ]] || export GUEST_SAN_JARS="$(readlink -f "$SAN_BEFORE_JAR") $vm_work/blocknode.jar"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
guests_before=$(pgrep -c -f '^qemu-system-x86_64' || true)
rc=0
VM_QUIET=1 bash "$REPO/test-e2e/vm/e2e.sh" san:san-bench || rc=$?
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
results=$vm_work/results/san/san-bench
# SAN_JFR=1: each stage burst's flight recording read here, beside it (jfr-waits.sh; in the guest it took 90 s).
for jfr in "$results"/stage-*.jfr; do
  [[ -f $jfr ]] && bash "$(dirname "${BASH_SOURCE[0]}")/jfr-waits.sh" "$jfr" > "${jfr%.jfr}-jfr.txt" 2>&1
done

bash "$(dirname "${BASH_SOURCE[0]}")/san-report.sh" "$results" "$rc" "$load_before" "$load_after" "$guests_before" \
  > "$OUT/san-results.md"
cat "$OUT/san-results.md"
exit "$rc"
