#!/usr/bin/env bash
# Runs the VM tier: prepares on the host what the guests need, boots one guest per scenario, and
# prints a summary line ("vm-smoke: 1 passed, 0 failed") and the time each phase took.
#
#   test-e2e/vm/e2e.sh [RUN...]     a RUN is one boot: SCENARIO (test-e2e/vm/guest/SCENARIO.sh alone) or
#                                   NAME:SCENARIO+SCENARIO... (guest/suite.sh runs them in turn in one boot,
#                                   the SAN started once; results in results/NAME/SCENARIO/)
#   default: smoke, the iscsi-* scenarios in two boots, iscsi-crash, sanity, nvme-tcp and sanity-nvme in one
#   boot, fc and sanity-fc in one boot, fencing, selinux, nvme-reservations and nvme-fencing in one boot on the newest
#   trixie-backports kernel
#   (DEFAULT_RUNS), one guest at a time (VM_LANES)
#
# Needs root (qemu reads the whole host / to share it) and the packages of setup.sh; the plugin's jar
# must be built (make e2e-vm does both). Host-side preparation, all cached under $VM_WORK:
#   - the initramfs (build-initramfs.sh);
#   - GuestClient compiled into guest-client.jar: javac in the guest would cost 10-20 s a run;
#   - JDK 25 AOT caches for the plugin and the client, trained here by a short run of both: under TCG
#     they cut each JVM's start from ~8-15 s to ~3-4 s. Retrained when the jars or the JDK change.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$VM_DIR/guest/jvm.sh"

# The smoke scenario sets iSCSI up by hand and hands the plugin a device (local transport); the iscsi-*
# scenarios leave all of it to the plugin's own iscsi transport, and share two boots (a boot and the
# SAN's start cost ~15 s, and later JVMs of a boot start faster than the first). One boot of all eight took 815 s of
# its 900 s limit beside the kube tier's cold build on a fresh machine: split in two (about 380 s and 440 s), each
# keeps more than the 25% margin every boot keeps on its limit.
# csi-sanity (sanity) and the crash scenario (iscsi-crash) have boots of their own: each runs for minutes,
# longer than a suite's per-scenario limit.
# nvme-tcp (the plugin's nvme-tcp transport against the kernel's nvmet) and sanity-nvme (csi-sanity over it)
# need no iSCSI daemon and start their own ("# vm-san: own" in their headers: suite.sh then starts no SAN):
# one boot for both. fc (the plugin's fc transport over FCoE VN2VN with LIO tcm_fc as the array) and sanity-fc
# (csi-sanity over it) alike: one boot; each builds its fabric and takes it down, and each sets scsi_mod's
# scan mode to manual (through sysfs, not the kernel's command line). These four declare "# vm-limit: 800",
# what each had in a boot of its own; such a suite's boot gets their sum + 100 s as its VM_TIMEOUT (run_timeout).
# (Two boots instead of four saved 13 s of 247 on a quiet host, 27 s of 534 on a busy one: a boot, a first JVM
# start under TCG and a daemon start each; the README has the figures.)
# selinux boots with SELinux as the kernel's LSM (its "# vm-append:" line) and a policy loaded: a boot of its own,
# so that no other scenario runs under it.
# nvme-reservations needs NVMe reservations in nvmet (Linux 6.13 on): it boots the newest kernel of trixie-backports
# (its "# vm-kernel:" line; fetched and unpacked during the preparation, then reused), with nvme_core.multipath=N (its
# "# vm-append:" line); nvme-fencing (two plugin instances fenced on one namespace) needs the same, and shares the boot.
# Every other boot keeps the host's kernel.
DEFAULT_RUNS=(smoke iscsi:iscsi-fs+iscsi-shared-session+iscsi-wrong-lun+iscsi-chap+iscsi-lost-record
              iscsi-paths:iscsi-path-loss+iscsi-luks+san-bench
              iscsi-crash sanity nvme:nvme-tcp+sanity-nvme fc:fc+sanity-fc fencing selinux
              nvme-reservations:nvme-reservations+nvme-fencing)
runs=("$@")
((${#runs[@]})) || runs=("${DEFAULT_RUNS[@]}")
[[ $(id -u) -eq 0 ]] || { echo "e2e.sh: must run as root (qemu shares the host's / with the guest)" >&2; exit 2; }
export JAVA_HOME=${JAVA_HOME:-$("$REPO_ROOT/scripts/find-jdk.sh")}
# VM_PLUGIN_JAR: another build of the plugin (a patched copy, say) instead of java/target's.
PLUGIN_JAR=${VM_PLUGIN_JAR:-$REPO_ROOT/java/target/blocknode.jar}
[[ -f $PLUGIN_JAR ]] || { echo "e2e.sh: no $PLUGIN_JAR; build it first (make build)" >&2; exit 2; }
# The sanity scenario's test controller and front (the e2e jar) and csi-sanity (make builds it).
E2E_JAR=${VM_E2E_JAR:-$REPO_ROOT/test-e2e/target/blocknode-e2e.jar}
export GUEST_CSI_SANITY=${VM_CSI_SANITY:-$REPO_ROOT/.tools/bin/csi-sanity-v5.6.0}
# run_name RUN / run_scenarios RUN: "NAME:A+B" -> NAME / "A B"; "A" -> A / A.
run_name() { [[ $1 == *:* ]] && echo "${1%%:*}" || echo "$1"; }
run_scenarios() { local list=${1#*:}; echo "${list//+/ }"; }
# run_append RUN: the kernel command line a run's scenarios ask for, each in a "# vm-append: WORDS" line of its
# header (the selinux scenario's security=selinux), added to $VM_APPEND for that boot only.
run_append() {
  local s
  for s in $(run_scenarios "$1"); do sed -n 's/^# vm-append: //p' "$VM_DIR/guest/$s.sh"; done | tr '\n' ' '
}
# run_kernel RUN: the Debian suite whose newest kernel the run boots, from a "# vm-kernel: SUITE" line of its
# scenarios' headers (fetch-kernel.sh SUITE), or nothing for the host's kernel. The scenarios of a suite boot must
# agree: one that names none would otherwise run on a kernel it was not written for, or the other way round.
run_kernel() {
  local s kernels
  kernels=$(for s in $(run_scenarios "$1"); do
              printf '%s\n' "$(sed -n 's/^# vm-kernel: *\([^ ]*\).*/\1/p' "$VM_DIR/guest/$s.sh" | head -n 1)"
            done | sort -u)
  [[ $(wc -l <<<"$kernels") == 1 ]] ||
    { echo "e2e.sh: the scenarios of $1 ask for different kernels (${kernels//$'\n'/, }; empty: the host's): give them boots of their own" >&2; return 1; }
  echo "$kernels"
}
# run_timeout RUN: the boot's VM_TIMEOUT when the caller set none: the sum of its scenarios' limits (a scenario's
# "# vm-limit: S", else 600 s as suite.sh has it) and 100 s for the boot, or 900 s if that is more. A suite's boot is
# bounded by its scenarios' limits: each scenario of it already has one (suite.sh), and a boot of several scenarios
# that all passed must not then be cut short (the iscsi boot took 878 s of a fixed 900 on a fresh machine, with the
# Maven run and the first build of Kubernetes beside it).
run_timeout() {
  local s own sum=100
  for s in $(run_scenarios "$1"); do
    own=$(sed -n 's/^# vm-limit: *\([0-9]*\).*/\1/p' "$VM_DIR/guest/$s.sh" | head -n 1)
    sum=$((sum + ${GUEST_SCENARIO_TIMEOUT:-${own:-600}}))
  done
  ((sum > 900)) && echo "$sum" || echo 900
}
scenario_count=0
for r in "${runs[@]}"; do
  for s in $(run_scenarios "$r"); do
    [[ -f $VM_DIR/guest/$s.sh ]] || { echo "e2e.sh: no scenario $VM_DIR/guest/$s.sh" >&2; exit 2; }
    if [[ $s == sanity* ]]; then
      [[ -f $E2E_JAR ]] || { echo "e2e.sh: no $E2E_JAR; build it first (make build)" >&2; exit 2; }
      [[ -x $GUEST_CSI_SANITY ]] || { echo "e2e.sh: no csi-sanity at $GUEST_CSI_SANITY (make builds it)" >&2; exit 2; }
    fi
    scenario_count=$((scenario_count + 1))
  done
  run_kernel "$r" >/dev/null || exit 2
done
mkdir -p "$VM_WORK"

started=$(now_ms)

# ---------------------------------------------------------------------------------- plugin's jar

# The guests run a copy of the jar, taken now: a rebuild of java/target while a guest runs (make,
# an IDE, another terminal) must not change the jar under a running JVM, nor invalidate the AOT
# cache trained for it. Copied only when it differs, keeping its time stamp (the AOT check uses it).
GUEST_JAR=$VM_WORK/blocknode.jar
GUEST_E2E_JAR=$VM_WORK/blocknode-e2e.jar
# snapshot_jar SOURCE COPY
snapshot_jar() {
  if cmp -s "$1" "$2"; then
    echo "e2e: jar unchanged ($2)"; return
  fi
  cp -p "$1" "$2.tmp.$$" && mv -f "$2.tmp.$$" "$2"
  echo "e2e: copied $1 to $2"
}

# ------------------------------------------------------------------------------------ GuestClient

CLIENT_SOURCE=$VM_DIR/guest/GuestClient.java
CLIENT_JAR=$VM_WORK/guest-client.jar
build_client() {
  if [[ -f $CLIENT_JAR && $CLIENT_JAR -nt $CLIENT_SOURCE && $CLIENT_JAR -nt $GUEST_JAR ]]; then
    echo "e2e: guest client up to date ($CLIENT_JAR)"; return
  fi
  local tmp
  tmp=$(mktemp -d "$VM_WORK/.client.XXXXXX")
  "$JAVA_HOME/bin/javac" -Xlint:all -Werror -cp "$GUEST_JAR" -d "$tmp/classes" "$CLIENT_SOURCE" &&
    "$JAVA_HOME/bin/jar" --create --file "$tmp/guest-client.jar" -C "$tmp/classes" . &&
    mv -f "$tmp/guest-client.jar" "$CLIENT_JAR"
  local rc=$?
  rm -rf "$tmp"
  ((rc == 0)) && echo "e2e: compiled $CLIENT_JAR"
  return $rc
}

# NvmeReservationProbe (the nvme-reservations scenario's), compiled against the guest's jar as GuestClient is.
PROBE_SOURCE=$VM_DIR/guest/NvmeReservationProbe.java
PROBE_JAR=$VM_WORK/nvme-probe.jar
build_probe() {
  if [[ -f $PROBE_JAR && $PROBE_JAR -nt $PROBE_SOURCE && $PROBE_JAR -nt $GUEST_JAR ]]; then
    echo "e2e: NVMe reservation probe up to date ($PROBE_JAR)"; return
  fi
  local tmp rc=0
  tmp=$(mktemp -d "$VM_WORK/.probe.XXXXXX")
  "$JAVA_HOME/bin/javac" -Xlint:all -Werror -cp "$GUEST_JAR" -d "$tmp/classes" "$PROBE_SOURCE" &&
    "$JAVA_HOME/bin/jar" --create --file "$tmp/nvme-probe.jar" -C "$tmp/classes" . &&
    mv -f "$tmp/nvme-probe.jar" "$PROBE_JAR" || rc=$?
  rm -rf "$tmp"
  ((rc == 0)) && echo "e2e: compiled $PROBE_JAR"
  return $rc
}

# ------------------------------------------------------------------------------------------ kernels

# The kernels the runs' "# vm-kernel:" lines name: each suite's newest, fetched and unpacked (or found unpacked
# still current) by fetch-kernel.sh, with an initramfs of its own modules. KERNEL_ROOT[SUITE] is empty when the
# suite's kernel could not be had: the boots that need it then fail with the reason, the others run.
declare -A KERNEL_ROOT=() KERNEL_INITRAMFS=()
prepare_kernels() {
  local r suite root initramfs t0
  for r in "${runs[@]}"; do
    suite=$(run_kernel "$r")
    [[ -n $suite && -z ${KERNEL_ROOT[$suite]+set} ]] || continue
    t0=$(now_ms)
    KERNEL_ROOT[$suite]=""
    if root=$("$VM_DIR/fetch-kernel.sh" "$suite") &&
       initramfs=$(VM_KERNEL="" VM_KERNEL_ROOT=$root "$VM_DIR/build-initramfs.sh"); then
      KERNEL_ROOT[$suite]=$root KERNEL_INITRAMFS[$suite]=$initramfs
      echo "e2e: kernel ${root##*/} of $suite ready in $(( $(now_ms) - t0 )) ms ($root)"
    else
      echo "e2e: no kernel of $suite (fetch-kernel.sh says why above): the boots that need it fail" >&2
    fi
  done
}

# ------------------------------------------------------------------------------------- AOT caches

# One short run of the plugin on the host, with a Probe and a refused NodeStageVolume (a device that
# does not exist: nothing is formatted or mounted) from the client, records which classes both load;
# each JVM writes its cache when it exits.
train_aot() {
  local feature
  feature=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$JAVA_HOME/release")
  if ((feature < 25)); then
    echo "e2e: JDK $feature has no one-step AOT cache (JDK 25+): guest JVMs start without one"; return
  fi
  local key
  local jars=("$GUEST_JAR" "$CLIENT_JAR") e2e=no
  if [[ -f ${GUEST_E2E_JAR:-} ]]; then jars+=("$GUEST_E2E_JAR"); e2e=yes; fi
  key=$( { "$JAVA_HOME/bin/java" -version 2>&1; sha256sum "${jars[@]}" | cut -d' ' -f1
           echo "${VM_JAVA_OPTS[*]}"; } | sha256sum | cut -c1-16)
  AOT_DIR=$VM_WORK/aot/$key
  if [[ -f $AOT_DIR/plugin.aot && -f $AOT_DIR/client.aot && ($e2e == no || -f $AOT_DIR/e2e.aot) ]]; then
    echo "e2e: AOT caches up to date ($AOT_DIR)"; return
  fi
  local t0 tmp plugin_pid line ready=no rc=0
  t0=$(now_ms)
  mkdir -p "$VM_WORK/aot"
  tmp=$(mktemp -d /tmp/bn-vm-aot.XXXXXX)
  coproc TRAIN_PLUGIN {
    exec "$JAVA_HOME/bin/java" "${VM_JAVA_OPTS[@]}" -XX:AOTCacheOutput="$tmp/plugin.aot" -jar "$GUEST_JAR" \
      --endpoint "unix://$tmp/csi.sock" --kubelet-root "$tmp/kubelet" --state-dir "$tmp/state" --log-format text 2>&1
  }
  plugin_pid=$TRAIN_PLUGIN_PID
  # Ready when it says so: read its log until the line, then keep draining it into a file.
  while IFS= read -r -t 60 line <&"${TRAIN_PLUGIN[0]}"; do
    echo "$line" >> "$tmp/plugin.log"
    [[ $line == *"listening on unix://"* ]] && { ready=yes; break; }
  done
  # (Through a duplicate: bash does not hand a coprocess's own descriptors to other children.)
  local drain_fd
  exec {drain_fd}<&"${TRAIN_PLUGIN[0]}"
  cat <&"$drain_fd" >> "$tmp/plugin.log" &
  exec {drain_fd}<&-
  # The sanity scenario's e2e jar (test controller + front), meanwhile: its start-up is what the guest
  # waits for (48 s under TCG on a busy host without a cache). Loop backend here: no tgtd on the host.
  local e2e_pid=""
  if [[ $e2e == yes ]]; then
    "$JAVA_HOME/bin/java" "${VM_JAVA_OPTS[@]}" -XX:AOTCacheOutput="$tmp/e2e.aot" -jar "$GUEST_E2E_JAR" \
      --controller-endpoint "unix://$tmp/c.sock" --front-endpoint "unix://$tmp/f.sock" \
      --plugin-endpoint "unix://$tmp/csi.sock" --node-id aot --work-dir "$tmp/work" > "$tmp/e2e.log" 2>&1 &
    e2e_pid=$!
  fi
  if [[ $ready == yes ]]; then
    printf '%s\n' probe "stage aot-vol /dev/bn-vm-aot-absent $tmp/kubelet/plugins/kubernetes.io/csi/x/aot-vol/globalmount ext4" |
      "$JAVA_HOME/bin/java" "${VM_JAVA_OPTS[@]}" -XX:AOTCacheOutput="$tmp/client.aot" \
        -cp "$GUEST_JAR:$CLIENT_JAR" GuestClient "$tmp/csi.sock" serve > "$tmp/client.log" 2>&1 || rc=$?
  else
    rc=1
  fi
  if [[ -n $e2e_pid ]]; then
    local deadline=$((SECONDS + 60))
    until grep -q "test controller (loop volumes) on" "$tmp/e2e.log" 2>/dev/null; do
      if ! kill -0 "$e2e_pid" 2>/dev/null || ((SECONDS >= deadline)); then rc=1; break; fi
      sleep 0.2
    done
    kill -TERM "$e2e_pid" 2>/dev/null || true
    wait "$e2e_pid" 2>/dev/null || true       # exits after writing its cache
  fi
  kill -TERM "$plugin_pid" 2>/dev/null || true
  wait "$plugin_pid" 2>/dev/null || true     # exits after writing its cache
  wait                                       # the log drain
  if ((rc == 0)) && [[ -f $tmp/plugin.aot && -f $tmp/client.aot && ($e2e == no || -f $tmp/e2e.aot) ]]; then
    mkdir -p "$AOT_DIR.new" && mv "$tmp/plugin.aot" "$tmp/client.aot" "$AOT_DIR.new/"
    [[ $e2e == no ]] || mv "$tmp/e2e.aot" "$AOT_DIR.new/"
    find "$VM_WORK/aot" -mindepth 1 -maxdepth 1 -type d ! -name "$key.new" -exec rm -rf {} +
    mv "$AOT_DIR.new" "$AOT_DIR"
    echo "e2e: trained AOT caches in $(( $(now_ms) - t0 )) ms ($AOT_DIR)"
  else
    echo "e2e: AOT training failed (guests will start slower); logs:" >&2
    cat "$tmp/plugin.log" "$tmp/client.log" "$tmp/e2e.log" >&2 2>/dev/null || true
    AOT_DIR=""
  fi
  rm -rf "$tmp"
}

# ------------------------------------------------------------------------------------------- run

AOT_DIR=""
export VM_INITRAMFS
VM_INITRAMFS=$("$VM_DIR/build-initramfs.sh")
snapshot_jar "$PLUGIN_JAR" "$GUEST_JAR"
[[ -f $E2E_JAR ]] && snapshot_jar "$E2E_JAR" "$GUEST_E2E_JAR" && export GUEST_E2E_JAR
build_client
if [[ " ${runs[*]} " == *nvme-reservations* ]]; then
  build_probe
  export GUEST_NVME_PROBE_JAR=$PROBE_JAR
fi
prepare_kernels
train_aot
export GUEST_PLUGIN_JAR=$GUEST_JAR GUEST_CLIENT_JAR=$CLIENT_JAR
if [[ -n $AOT_DIR ]]; then
  export GUEST_PLUGIN_AOT=$AOT_DIR/plugin.aot GUEST_CLIENT_AOT=$AOT_DIR/client.aot
  [[ -f $AOT_DIR/e2e.aot ]] && export GUEST_E2E_AOT=$AOT_DIR/e2e.aot
fi
prepared=$(now_ms)
echo "e2e: host-side preparation took $((prepared - started)) ms"

# A scenario that handles a secret lists it in its results' secret-canaries file: it must then appear
# in none of the run's other files (console, dmesg, plugin and client logs, the commands record...).
leaked_secrets() {
  local dir=$1 canaries line hits=""
  while IFS= read -r canaries; do
    while IFS= read -r line; do
      [[ -n $line ]] || continue
      hits+=$(grep -rlF --exclude=secret-canaries -e "$line" "$dir" 2>/dev/null | sed 's/^/ /')
    done < "$canaries"
  done < <(find "$dir" -name secret-canaries)
  [[ -n $hits ]] && echo "$hits"
}

# boot RUN: one guest for RUN; its exit status and wall seconds go to $VM_WORK/results/NAME.boot. A boot that shares
# the machine with VM_LANES - 1 others gets about 1/VM_LANES of what it would alone, so its hard limit (VM_TIMEOUT,
# a guard against a hung guest, not a budget) is that many times the limit of a boot alone.
boot() {
  local r=$1 name results t0 rc=0 append limit cpu0 cpu1 suite
  local -a kernel=()
  children_cpu_ticks cpu0
  name=$(run_name "$r")
  results=$VM_WORK/results/$name
  t0=$(now_ms)
  append="${VM_APPEND:-} $(run_append "$r")"
  limit=$(( ${VM_TIMEOUT:-$(run_timeout "$r")} * LANES ))
  rm -rf "$results"
  # A run whose scenarios name a suite boots that suite's kernel, for this boot only.
  suite=$(run_kernel "$r")
  if [[ -n $suite ]]; then
    if [[ -z ${KERNEL_ROOT[$suite]} ]]; then
      mkdir -p "$results"
      echo "e2e: $name boots the newest kernel of $suite, and none could be fetched (test-e2e/vm/fetch-kernel.sh $suite)" |
        tee "$results/console.log" >&2
      echo "2 0 0" > "$VM_WORK/results/$name.boot"
      return
    fi
    kernel=(VM_KERNEL="" VM_KERNEL_ROOT="${KERNEL_ROOT[$suite]}" VM_INITRAMFS="${KERNEL_INITRAMFS[$suite]}")
  fi
  # In the background and waited for, with its pid on file: stop_boots (below) must reach run-guest.sh itself, which
  # stops its qemu; a lane's subshell killed alone would leave it running (env execs it: the pid is run-guest.sh's).
  if [[ $r == *:* ]]; then
    env "${kernel[@]}" VM_TIMEOUT="$limit" VM_APPEND="$append" GUEST_SUITE="$(run_scenarios "$r")" GUEST_LANES="$LANES" \
      "$VM_DIR/run-guest.sh" "$VM_DIR/guest/suite.sh" "$results" &
  else
    env "${kernel[@]}" VM_TIMEOUT="$limit" VM_APPEND="$append" GUEST_LANES="$LANES" \
      "$VM_DIR/run-guest.sh" "$VM_DIR/guest/$r.sh" "$results" &
  fi
  echo $! > "$VM_WORK/results/$name.guest-pid"
  wait $! || rc=$?
  rm -f "$VM_WORK/results/$name.guest-pid"
  children_cpu_ticks cpu1
  echo "$rc $(( ($(now_ms) - t0) / 1000 )) $((cpu1 - cpu0))" > "$VM_WORK/results/$name.boot"
}

# children_cpu_ticks VAR: sets VAR to the CPU time (clock ticks) of this shell's children that have ended and been
# waited for, theirs included: qemu's, once its boot is over. /proc/PID/stat's fields 16 and 17 (cutime, cstime),
# counted past the command name in ( ). Not through $( ): that would read a subshell's own, empty, count.
children_cpu_ticks() {
  local stat
  local -a f
  read -r stat < "/proc/$BASHPID/stat"
  read -r -a f <<< "${stat##*) }"
  printf -v "$1" '%d' $(( f[13] + f[14] ))
}
TICKS=$(getconf CLK_TCK)

# VM_LANES (default 1): how many guests run at once, each boot taking the next run of the list when a lane frees up,
# each boot's console echoed with its name in front. One by default: a guest alone keeps 1.5-1.7 of the 2 cores busy
# (each boot's summary line says), and beside another each went 2.5-4x slower than alone (an iscsi-crash cycle
# 134-194 s against 37-51 s), past the 2x at which two lanes break even: its work cost about twice the CPU (README.md,
# "Two guests at a time"). For a machine with more cores than the guests have vCPUs.
LANES=${VM_LANES:-1}
[[ $LANES =~ ^[1-9]$ ]] || { echo "e2e.sh: VM_LANES must be 1-9, not '$LANES'" >&2; exit 2; }
((${#runs[@]} >= LANES)) || LANES=${#runs[@]}
mkdir -p "$VM_WORK/results"
rm -f "$VM_WORK"/results/*.guest-pid
for r in "${runs[@]}"; do rm -f "$VM_WORK/results/$(run_name "$r").boot"; done
# Interrupted (make stopped, a CI limit): every guest running is stopped, and no other boot starts.
stop_boots() {
  trap - INT TERM
  local f
  for f in "$VM_WORK"/results/*.guest-pid; do
    [[ -e $f ]] && kill -TERM "$(cat "$f")" 2>/dev/null
  done
  wait
  exit "$1"
}
trap 'stop_boots 130' INT
trap 'stop_boots 143' TERM
running=0
for r in "${runs[@]}"; do
  if ((LANES == 1)); then
    boot "$r"
    continue
  fi
  if ((running == LANES)); then wait -n || true; running=$((running - 1)); fi
  name=$(run_name "$r")
  echo "e2e: booting $name ($((running + 1)) of $LANES lanes busy)"
  boot "$r" 2>&1 | sed -u "s/^/$name | /" &
  running=$((running + 1))
done
wait

# kernel_note RUN: which kernel a run booted, when not the host's (", kernel 7.3.4+deb13-amd64 of trixie-backports").
kernel_note() {
  local suite
  suite=$(run_kernel "$1")
  [[ -z $suite || -z ${KERNEL_ROOT[$suite]} ]] || echo ", kernel ${KERNEL_ROOT[$suite]##*/} of $suite"
}

# failure_reason LOG: the line of a failed scenario's log that says why, for a summary line of its own (an excerpt
# of a CI log may keep the summary and drop the tails below it): its last "FAILED at step", time-limit or FAIL line,
# else its last line.
failure_reason() {
  local line
  line=$(grep -E 'FAILED at step|did not finish within|^FAIL|(^| )FAIL ' "$1" 2>/dev/null | tail -n 1)
  [[ -n $line ]] || line=$(grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -n 1)
  echo "${line:-no log}" | sed 's/^\[ *[0-9.]*\] *//' | cut -c1-200
}
passed=0; failed=0; xfailed=0; report=(); tails=(); reasons=()
for r in "${runs[@]}"; do
  name=$(run_name "$r")
  results=$VM_WORK/results/$name
  # No status at all (the boot's own shell died): as run-guest.sh says of a guest that never reported one.
  read -r rc seconds ticks < "$VM_WORK/results/$name.boot" 2>/dev/null || { rc=125; seconds="?"; ticks=0; }
  cpu="$((ticks / TICKS)) s of CPU, $(awk -v t="$ticks" -v hz="$TICKS" -v s="$seconds" 'BEGIN { printf "%.2f", (s > 0 ? t / hz / s : 0) }') cores"
  leaks=$(leaked_secrets "$results" || true)
  failed_before=$failed
  if [[ $r == *:* ]]; then
    # One line per scenario of the boot, from the status and time suite.sh saved for each.
    for s in $(run_scenarios "$r"); do
      status=$(cat "$results/$s/exit-status" 2>/dev/null || echo "none (boot exit $rc)")
      took=$(cat "$results/$s/seconds" 2>/dev/null || echo "?")
      sleaks=$(leaked_secrets "$results/$s" || true)
      known=$(grep -h '^X' "$results/$s/xfail" 2>/dev/null | sed 's/^/; /' | tr -d '\n' || true)
      if [[ $status == 0 && -z $sleaks ]] && grep -q '^XFAIL-SCENARIO' "$results/$s/xfail" 2>/dev/null; then
        xfailed=$((xfailed + 1)); report+=("XFAIL $s (${took} s, in boot $name$known)")
      elif [[ $status == 0 && -z $sleaks ]]; then
        passed=$((passed + 1)); report+=("PASS $s (${took} s, in boot $name$known)")
      elif [[ -n $sleaks ]]; then
        failed=$((failed + 1)); report+=("FAIL $s: a secret leaked into:$sleaks")
      else
        failed=$((failed + 1)); report+=("FAIL $s (exit $status, ${took} s; log: $results/$s/console.log)")
        tails+=("$results/$s/console.log"); reasons+=("$s failed: $(failure_reason "$results/$s/console.log")")
      fi
    done
    report+=("     boot $name: exit $rc, ${seconds} s, $cpu$(kernel_note "$r") (console: $results/console.log)")
    # The boot's own files (console, dmesg) hold every scenario's output: checked for secrets too.
    [[ -z $leaks ]] || { failed=$((failed + 1)); report+=("FAIL boot $name: a secret leaked into:$leaks"); }
    # A boot that failed although each scenario passed (the SAN did not stop, the guest crashed...).
    if ((rc != 0 && failed == failed_before)); then
      failed=$((failed + 1)); report+=("FAIL boot $name (exit $rc; console: $results/console.log)")
      tails+=("$results/console.log"); reasons+=("boot $name failed: $(failure_reason "$results/console.log")")
    fi
  elif ((rc == 0)) && [[ -z $leaks ]]; then
    known=$(grep -h '^X' "$results/xfail" 2>/dev/null | sed 's/^/; /' | tr -d '\n' || true)
    if grep -q '^XFAIL-SCENARIO' "$results/xfail" 2>/dev/null; then
      xfailed=$((xfailed + 1)); report+=("XFAIL $r (${seconds} s$known)")
    else
      passed=$((passed + 1)); report+=("PASS $r (${seconds} s, $cpu$(kernel_note "$r")$known)")
    fi
  elif [[ -n $leaks ]]; then
    failed=$((failed + 1)); report+=("FAIL $r: a secret leaked into:$leaks")
  else
    failed=$((failed + 1)); report+=("FAIL $r (exit $rc, ${seconds} s$(kernel_note "$r"); console: $results/console.log)")
    tails+=("$results/console.log"); reasons+=("$r failed: $(failure_reason "$results/console.log")")
  fi
done

# run-guest.sh stops its qemu on every path; make sure, since a stray emulator eats a whole core. Only
# this run's guests count (their results share lies under $VM_WORK): other checkouts on the same machine
# may be running guests of their own.
if stray=$(pgrep -a -f '^qemu-system-x86_64 -name bn-vm-' | grep -F "path=$(readlink -f "$VM_WORK")/results/"); then
  echo "e2e: qemu processes left running:" >&2; echo "$stray" >&2; failed=$((failed + 1))
fi

printf '%s\n' "${report[@]}"
label=vm-e2e; ((${#runs[@]} == 1)) && [[ ${runs[0]} != *:* ]] && label=vm-${runs[0]}
if ((xfailed)); then
  echo "$label: $passed passed, $failed failed, $xfailed expected to fail (known plugin bugs: test-e2e/vm/README.md)"
else
  echo "$label: $passed passed, $failed failed"
fi
echo "e2e: wall time $(( ($(now_ms) - started) / 1000 )) s (preparation $(( (prepared - started) / 1000 )) s, guests $(( ($(now_ms) - prepared) / 1000 )) s)"
for reason in "${reasons[@]}"; do echo "$label: $reason"; done
# Last, where a CI log's tail shows it: how each failed scenario ended. The failed step's own words come before
# the diagnosis printed after it (dmesg, the plugin's log), so they are shown first, then the log's last lines.
for log in "${tails[@]}"; do
  at=$(grep -n -E '(^|[[:space:]])step [^ ]+ +FAILED ' "$log" 2>/dev/null | tail -n 1 | cut -d: -f1)
  if [[ -n $at ]]; then
    echo "--- the failed step in $log:"
    sed -n "$((at > 10 ? at - 10 : 1)),${at}p" "$log" | cut -c1-300
  fi
  echo "--- the end of $log:"
  tail -n 8 "$log" 2>/dev/null | cut -c1-300
done
((failed == 0))
