# shellcheck shell=bash
# Guest-side library for the VM tier: sourced by scenario scripts that run as the guest's test script
# (see ../run-guest.sh). It brings up a small SAN inside the guest and tears it down again:
#
#   udevd ........ device links and the uevents multipathd listens to
#   tgtd ......... the "array": an iSCSI target whose LUNs are files on a tmpfs in the guest
#   iscsid ....... the initiator daemon iscsiadm talks to
#   multipathd ... builds a dm-multipath map from the two paths (portals 127.0.0.1 and 127.0.0.2)
#
# Waits are poll loops with a deadline (vm_wait): inside the guest there is no event API at hand for
# "a sysfs file appeared" or "a daemon's socket is listening". A poll must cost no more than its check: under
# TCG a fork and exec costs about 50 ms of a vCPU (/bin/true, quiet host), so the loops pause with vm_nap and
# read the clock from $EPOCHREALTIME, both without a process (with sleep(1) and $(vm_now_ms) a "0.1 s" poll
# took 0.28 s, two thirds of it the poll's own processes, taken from what it waited for).
#
# Everything is written to the guest's overlay or tmpfs: nothing reaches the host but /results.

set -o pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

VM_RESULTS=${VM_RESULTS:-/results}
VM_LUN_DIR=${VM_LUN_DIR:-/srv/bn-luns}
# shellcheck disable=SC2034  # for the scenarios that source this file
VM_PORTALS=(127.0.0.1 127.0.0.2)
VM_ISCSI_PORT=3260
VM_INITIATOR=iqn.2024-01.dev.blocknode:vm-initiator

# ---------------------------------------------------------------------------------------- timing

# vm_now_ms_to NAME: the time in ms into the variable NAME, without the subshell of $(vm_now_ms).
vm_now_ms_to() { local t=${EPOCHREALTIME/./}; printf -v "$1" '%d' $((t / 1000)); }
vm_now_ms() { local ms; vm_now_ms_to ms; echo "$ms"; }

# vm_nap SECONDS: a pause without a process: read with a timeout from a FIFO nobody writes to (opened read-write,
# so the open does not wait for a writer; per call, so no command inherits it).
VM_NAP_FIFO=/run/bn-vm-nap.fifo
[[ -p $VM_NAP_FIFO ]] || mkfifo "$VM_NAP_FIFO"
vm_nap() { read -r -t "$1" <>"$VM_NAP_FIFO" || true; }

# Guest uptime in seconds, to relate a line to the boot.
vm_uptime() { local up _; read -r up _ < /proc/uptime; echo "$up"; }

vm_log() { echo "[guest $(vm_uptime)] $*"; }

# vm_step NAME COMMAND...: runs COMMAND and prints one line: "step NAME: ok|FAILED (rc N) in N ms".
# Returns COMMAND's status.
vm_step() {
  local name=$1; shift
  local start end rc=0
  vm_now_ms_to start
  "$@" || rc=$?
  vm_now_ms_to end
  if ((rc == 0)); then
    printf 'step %-28s ok      %6d ms\n' "$name" $((end - start))
  else
    printf 'step %-28s FAILED  %6d ms (rc %d)\n' "$name" $((end - start)) "$rc"
  fi
  return "$rc"
}

# vm_wait DESCRIPTION SECONDS COMMAND...: polls COMMAND every 0.1 s until it succeeds; fails with a
# message once SECONDS have passed. Quiet on success.
vm_wait() { vm_wait_alive "" "$@"; }

# vm_wait_alive PID DESCRIPTION SECONDS COMMAND...: vm_wait that also gives up at once if process PID
# exits (a daemon that died will not bring the awaited condition about).
vm_wait_alive() {
  local pid=$1 what=$2 seconds=$3; shift 3
  local now deadline
  vm_now_ms_to now
  deadline=$((now + seconds * 1000))
  until "$@" >/dev/null 2>&1; do
    if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
      echo "process $pid exited while waiting for $what" >&2
      return 1
    fi
    vm_now_ms_to now
    if ((now >= deadline)); then
      echo "timed out after ${seconds} s waiting for $what" >&2
      return 1
    fi
    vm_nap 0.1
  done
}

# ------------------------------------------------------------------------------ checks for vm_wait

# A Unix socket is listening: abstract ones are named with a leading @, as /proc/net/unix shows them.
vm_unix_listening() { awk -v name="$1" '$NF == name {found = 1} END {exit !found}' /proc/net/unix; }

# A TCP port is listening on some address (IPv4 or IPv6). State 0A is LISTEN.
vm_tcp_listening() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v port=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == port {found = 1} END {exit !found}' \
    /proc/net/tcp /proc/net/tcp6
}

# ----------------------------------------------------------------------------------------- daemons

# Modules the SAN needs. The stock kernel has all of them as modules, none loaded at boot.
vm_load_modules() {
  modprobe -a iscsi_tcp sd_mod scsi_dh_alua dm_multipath dm_round_robin dm_service_time ext4 xfs
}

vm_udevd_start() {
  /lib/systemd/systemd-udevd --daemon || return
  vm_wait "udevd's control socket" 30 test -S /run/udev/control || return
  # Replaying "add" for the block subsystem only: the devices present at boot (loop, ram) get their
  # database entries. A full trigger (every PCI, ACPI, tty... device) costs ~6 s more under TCG and
  # gives nothing here; devices created later (iSCSI disks, dm maps) send their own uevents.
  udevadm trigger --action=add --subsystem-match=block && udevadm settle --timeout=30
}

vm_tgtd_start() {
  mkdir -p "$VM_LUN_DIR"
  # Backing files live on their own tmpfs: in memory, gone at power-off, and not in the overlay's
  # upper layer. Files are sparse, so the size limit is a ceiling, not an allocation.
  mountpoint -q "$VM_LUN_DIR" || mount -t tmpfs -o size=4g,mode=700 bn-luns "$VM_LUN_DIR" || return
  tgtd || return   # daemonizes once its sockets are set up
  # tgtd listens on every address (0.0.0.0 and ::), which is what makes the two loopback addresses
  # two portals of the same target.
  vm_wait "tgtd listening on port $VM_ISCSI_PORT" 30 vm_tcp_listening "$VM_ISCSI_PORT" &&
    vm_wait "tgtd's management socket" 30 tgtadm --lld iscsi --mode sys --op show
}

# vm_target_create TID IQN SIZE_MB...: a target with one LUN per size (LUN 1, 2, ...), open to every
# initiator. XFS refuses filesystems under 300 MB: give a LUN that may hold XFS at least 320 MB.
vm_target_create() {
  local tid=$1 iqn=$2; shift 2
  local lun=0 size file
  tgtadm --lld iscsi --mode target --op new --tid "$tid" --targetname "$iqn" || return
  for size in "$@"; do
    lun=$((lun + 1))
    file=$VM_LUN_DIR/t$tid-lun$lun.img
    truncate -s "${size}M" "$file" || return
    tgtadm --lld iscsi --mode logicalunit --op new --tid "$tid" --lun "$lun" --backing-store "$file" || return
  done
  tgtadm --lld iscsi --mode target --op bind --tid "$tid" --initiator-address ALL
}

vm_iscsid_start() {
  # The guest's own initiator name and config (in the overlay: the host's files are untouched).
  # iscsid.startup: Debian's default asks systemctl to start iscsid when iscsiadm finds it absent;
  # there is no systemd here, and a daemon appearing behind the test's back would hide a bug.
  echo "InitiatorName=$VM_INITIATOR" > /etc/iscsi/initiatorname.iscsi
  sed -i 's|^iscsid.startup = .*|iscsid.startup = /bin/false|' /etc/iscsi/iscsid.conf
  iscsid || return
  vm_wait "iscsid's control socket" 30 vm_unix_listening @ISCSIADM_ABSTRACT_NAMESPACE
}

# The tests' multipath.conf (a scenario may set VM_MULTIPATH_CONF to its own before vm_san_start;
# it is always written, so that a multipath.conf the host may have never leaks into the guest):
# - find_multipaths no: every SCSI disk that is not blacklisted becomes a multipath map at once, even
#   with a single path. Debian's default ("strict") builds maps only for WWIDs listed in
#   /etc/multipath/wwids, which someone must add (`multipath -a`). The guest's only SCSI disks are
#   the test LUNs, so "no" is right here; a scenario checking that the plugin copes with "strict"
#   nodes sets its own config.
# - user_friendly_names no: the map is named by its WWID (/dev/mapper/<wwid>), stable and the same
#   as what a controller knows the volume by, instead of a node-local mpathN.
# - path_grouping_policy multibus: both paths in one group, both active (tgt reports no ALUA states
#   that would rank them).
# - no_path_retry fail: with every path gone, I/O fails at once instead of queueing forever; a test
#   that removes paths then fails rather than hangs until the host's timeout.
# - polling_interval 1: the path checker runs every second, so path state changes show quickly.
VM_MULTIPATH_CONF=${VM_MULTIPATH_CONF:-'defaults {
    find_multipaths no
    user_friendly_names no
    path_grouping_policy multibus
    no_path_retry fail
    polling_interval 1
}'}

# GUEST_MULTIPATHD_V (make bench-san: SAN_MULTIPATHD_V): multipathd runs in the foreground at that verbosity (3:
# every uevent, CLI command and map reload it handles), its log appended to $VM_RESULTS/multipathd.log; unset, it
# daemonizes and logs nothing the results keep, as in every scenario of make test.
vm_multipathd_start() {
  mkdir -p /etc/multipath
  printf '%s\n' "$VM_MULTIPATH_CONF" > /etc/multipath.conf
  if [[ -n ${GUEST_MULTIPATHD_V:-} ]]; then
    multipathd -d -v"$GUEST_MULTIPATHD_V" >> "$VM_RESULTS/multipathd.log" 2>&1 &
  else
    multipathd || return
  fi
  vm_wait "multipathd's socket" 30 vm_unix_listening @/org/kernel/linux/storage/multipathd &&
    vm_wait "multipathd to finish its startup" 30 sh -c 'multipathd show daemon | grep -qE "idle|running"'
}

# All four, in dependency order (udevd before multipathd: multipathd learns of paths from udev).
vm_san_start() {
  vm_step load-modules vm_load_modules &&
    vm_step udevd vm_udevd_start &&
    vm_step tgtd vm_tgtd_start &&
    vm_step iscsid vm_iscsid_start &&
    vm_step multipathd vm_multipathd_start
}

# --------------------------------------------------------------------------------------- initiator

# vm_iscsi_login IQN PORTAL: a node record for IQN at PORTAL (ip:port), set to manual start and
# manual scan, then a login. With node.session.scan=manual the session comes up with NO disks: the
# caller scans exactly the LUNs it wants (vm_scan_lun), as a CSI node plugin must, rather than
# getting every LUN the target exports to this initiator.
vm_iscsi_login() {
  local iqn=$1 portal=$2
  iscsiadm -m node -o new -T "$iqn" -p "$portal" >/dev/null &&
    iscsiadm -m node -T "$iqn" -p "$portal" -o update -n node.startup -v manual &&
    iscsiadm -m node -T "$iqn" -p "$portal" -o update -n node.session.scan -v manual &&
    iscsiadm -m node -T "$iqn" -p "$portal" --login >/dev/null
}

# vm_iscsi_session IQN PORTAL: prints the session's sysfs name (sessionN) for IQN logged in at PORTAL.
vm_iscsi_session() {
  local iqn=$1 portal=$2 session conn
  for session in /sys/class/iscsi_session/session*; do
    [[ -e $session ]] || continue
    [[ $(cat "$session/targetname") == "$iqn" ]] || continue
    # The connection of session N is connectionN:0; it holds the portal actually in use.
    conn=/sys/class/iscsi_connection/connection${session##*session}:0
    [[ "$(cat "$conn/persistent_address"):$(cat "$conn/persistent_port")" == "$portal" ]] || continue
    echo "${session##*/}"; return 0
  done
  return 1
}

# vm_session_host SESSION: the SCSI host number of an iSCSI session. iscsi_tcp creates one SCSI host
# per session, and the session's device sits under it: /sys/class/iscsi_session/sessionN/device
# resolves to /sys/devices/platform/hostH/sessionN.
vm_session_host() {
  local device
  device=$(readlink -f "/sys/class/iscsi_session/$1/device") || return
  device=${device%/*}
  [[ ${device##*/} == host* ]] || return 1
  echo "${device##*/host}"
}

# vm_scan_lun SESSION LUN: scans that one LUN (channel 0, the session's target id) on the session's
# host, waits for its disk, and prints the disk's name (sdX). Writing "C T L" to the host's scan file
# probes only that address, synchronously; the sd driver then attaches asynchronously, hence the wait.
vm_scan_lun() {
  local session=$1 lun=$2 host target hctl
  host=$(vm_session_host "$session") || return
  target=$(cat "/sys/class/iscsi_session/$session/target_id" 2>/dev/null || echo 0)
  hctl=$host:0:$target:$lun
  echo "0 $target $lun" > "/sys/class/scsi_host/host$host/scan" || return
  vm_wait "a disk at $hctl" 30 sh -c "ls /sys/bus/scsi/devices/$hctl/block/ | grep -q ." || return
  ls "/sys/bus/scsi/devices/$hctl/block/"
}

# vm_wwid DISK: the WWID multipath uses for a disk (the same string names the map).
vm_wwid() { /lib/udev/scsi_id --whitelisted --device="/dev/$1"; }

# vm_mpath_dm WWID: prints dm-N of the multipath map for WWID, if there is one, else says there is none. Read from
# sysfs, which has the map as soon as device-mapper made it: udev's /dev/mapper/WWID may come later (the plugin waits
# for the map, not for udev).
vm_mpath_dm() {
  local dm
  for dm in /sys/block/dm-*; do
    [[ $(cat "$dm/dm/uuid" 2>/dev/null) == "mpath-$1" ]] && { echo "${dm##*/}"; return 0; }
  done
  echo "no multipath map of $1" >&2; return 1
}

# vm_mpath_has_paths WWID DISK...: the map exists and every DISK is one of its slaves.
vm_mpath_has_paths() {
  local wwid=$1 dm disk; shift
  dm=$(vm_mpath_dm "$wwid") || return
  for disk in "$@"; do [[ -e /sys/block/$dm/slaves/$disk ]] || return 1; done
}

# vm_wait_mpath WWID DISK...: waits until multipathd has built the map over all DISKs and udev has
# made /dev/mapper/WWID; prints dm-N.
vm_wait_mpath() {
  local wwid=$1; shift
  vm_wait "a multipath map for $wwid over $*" 60 vm_mpath_has_paths "$wwid" "$@" || return
  vm_wait "/dev/mapper/$wwid" 30 test -b "/dev/mapper/$wwid" || return
  vm_mpath_dm "$wwid"
}

# vm_remove_disk sdX: flushes and deletes the SCSI device (what a plugin does before logout).
vm_remove_disk() {
  blockdev --flushbufs "/dev/$1" && echo 1 > "/sys/block/$1/device/delete"
}

# vm_iscsi_logout IQN PORTAL: logs out and deletes the node record.
vm_iscsi_logout() {
  iscsiadm -m node -T "$1" -p "$2" --logout >/dev/null &&
    iscsiadm -m node -T "$1" -p "$2" -o delete
}

# ---------------------------------------------------------------------------------------- checking

# Prints what is left on the initiator side, one line per leftover; silent and 0 when all is clean:
# no SCSI disks, no dm devices, no iSCSI sessions, no node records.
vm_leftovers() {
  local found=0 path records
  for path in /sys/block/sd* /sys/block/dm-* /sys/class/iscsi_session/session*; do
    [[ -e $path ]] && { echo "left over: $path"; found=1; }
  done
  records=$(iscsiadm -m node 2>/dev/null) && [[ -n $records ]] && { echo "left over node records: $records"; found=1; }
  [[ -z $(ls -A /etc/iscsi/nodes 2>/dev/null) ]] || { echo "left over: /etc/iscsi/nodes/$(ls /etc/iscsi/nodes)"; found=1; }
  return $found
}

# Takes down whatever the initiator side holds, however a scenario left it (after a failure, say):
# unmounts what is mounted from a SCSI disk or dm device, flushes every multipath map, deletes every
# SCSI disk, logs out of every session and deletes every node record; then checks with vm_leftovers.
vm_initiator_teardown() {
  local mnt disk
  findmnt -rn -o TARGET,SOURCE | awk '$2 ~ /^\/dev\/(sd|dm-|mapper\/)/ {print $1}' | sort -r |
    while read -r mnt; do umount "$mnt" || umount -l "$mnt"; done
  multipath -F >/dev/null 2>&1
  for disk in /sys/block/sd*; do [[ -e $disk ]] && vm_remove_disk "${disk##*/}"; done
  iscsiadm -m node --logoutall=all >/dev/null 2>&1
  iscsiadm -m node -o delete >/dev/null 2>&1
  udevadm settle --timeout=30
  vm_leftovers
}

# Dumps the SAN's state: for a failed step, so the console log says why.
vm_diagnose() {
  echo "----- diagnosis at $(vm_uptime) s"
  lsblk -o NAME,KNAME,SIZE,TYPE,TRAN,HCTL,MOUNTPOINTS 2>&1
  iscsiadm -m session -P 3 2>&1 | grep -E 'Target:|Current Portal|Host Number|State|Attached' 
  multipathd show paths 2>&1
  multipathd show maps 2>&1
  findmnt -rn -o TARGET,SOURCE,FSTYPE 2>&1 | grep -vE '^/(proc|sys|dev|run)' 
  dmesg | tail -n 30
  echo "-----"
}

# No process of the four daemons is left.
vm_san_stopped() { ! pidof tgtd iscsid multipathd systemd-udevd >/dev/null; }

# Stops the daemons and waits until they are gone: not needed before power-off, but it proves they
# stop cleanly (a daemon that will not stop usually still holds a device or a session).
vm_san_stop() {
  local tid
  multipathd shutdown >/dev/null
  # iscsid refuses to stop while sessions exist (-k 0 ignores that: only after logging out).
  iscsiadm -k 0 >/dev/null 2>&1
  # tgtd exits on "delete system" only once it has no targets.
  for tid in $(tgtadm --lld iscsi --mode target --op show | sed -n 's/^Target \([0-9]*\):.*/\1/p'); do
    tgtadm --lld iscsi --mode target --op delete --force --tid "$tid" || return
  done
  tgtadm --lld iscsi --mode system --op delete >/dev/null
  udevadm control --exit || echo "udevadm control --exit failed (rc $?)"
  # 60 s: the guest is emulated, and one run saw a daemon still there after 30 s while the host was busy.
  vm_wait "tgtd, iscsid, multipathd and udevd to exit" 60 vm_san_stopped || vm_udevd_stop_by_signal || {
    local pid
    for pid in $(pidof tgtd iscsid multipathd systemd-udevd); do
      echo "still running: $pid $(cat "/proc/$pid/comm" 2>/dev/null) waiting in $(cat "/proc/$pid/wchan" 2>/dev/null)"
    done
    return 1; }
  umount "$VM_LUN_DIR"
}

# When udevd alone is left: one run (of many) saw systemd-udevd stay in epoll_wait 60 s after
# `udevadm control --exit`, every other daemon gone (udevd waits for its workers before it exits, so a worker
# still probing a device would hold it: the processes are shown, since that could be a device left behind). It
# is told again by SIGTERM, and said so; if it still stays, or another daemon does, the step fails.
vm_udevd_stop_by_signal() {
  pidof tgtd iscsid multipathd >/dev/null && return 1
  local pids
  pids=$(pidof systemd-udevd) || return 0
  echo "systemd-udevd ($pids) did not act on control --exit within 60 s; its processes:"
  ps -eo pid,ppid,stat,wchan:32,args | grep -E '[u]dev' | sed 's/^/  /'
  echo "sending it SIGTERM"
  kill -TERM $pids
  vm_wait "systemd-udevd to exit on SIGTERM" 15 vm_san_stopped
}
