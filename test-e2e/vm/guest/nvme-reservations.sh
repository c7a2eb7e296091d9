#!/bin/bash
# NVMe reservations against the kernel's nvmet (Linux >= 6.13, namespace attribute resv_enable): boots the newest
# kernel of trixie-backports (e2e.sh fetches and unpacks it, see fetch-kernel.sh) with nvme_core.multipath=N, so
# that each host's namespace is a block device of its own.
# vm-kernel: trixie-backports
# vm-append: nvme_core.multipath=N
# vm-san: own     (nvmet only, no daemon; shares its boot with nvme-fencing)
# vm-limit: 240   (11-25 s in make test's runs, 55 s beside six CPU hogs, 57 s at host load 16; once over 100 s)
#
#   test-e2e/vm/e2e.sh nvme-reservations
#
# e2e.sh compiles NvmeReservationProbe against the guest's copy of the plugin's jar (GUEST_NVME_PROBE_JAR). One
# subsystem, one namespace with reservations on, one port; two hosts (own host NQN and identifier each) connected
# through /dev/nvme-fabrics; then the probe runs the plugin's own NvmeReservations through the passthrough ioctl.
# At the end both controllers are deleted and the target taken down (port, namespace, subsystem, loop device, tmpfs),
# on every way out: a failed step or the suite's time limit must not leave them to nvme-fencing, which shares the
# boot (its target would find port 4420 taken and fail too).
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/lib.sh"
PLUGIN_JAR=${GUEST_PLUGIN_JAR:-$VM_WORK/blocknode.jar}
PROBE_JAR=${GUEST_NVME_PROBE_JAR:-$VM_WORK/nvme-probe.jar}
JAVA=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java
NQN=nqn.2024-01.dev.blocknode:nvme-resv
NVMET=/sys/kernel/config/nvmet
LUNS=/srv/bn-nvme-resv
s=$NVMET/subsystems/$NQN

loop=""
no_controller() { ! compgen -G '/sys/class/nvme/nvme*' >/dev/null && ! compgen -G '/sys/block/nvme*' >/dev/null; }
# take_down: the controllers and the target, whatever of them exists, each step checked (as nvme-lib.sh's
# nvme_target_delete takes the nvme-tcp scenario's target down); 1 when anything is left.
take_down() {
  local c rc=0
  for c in /sys/class/nvme/nvme*; do [[ -e $c/delete_controller ]] && echo 1 > "$c/delete_controller"; done
  vm_wait "no NVMe controller left" 30 no_controller || rc=1
  if [[ -L $NVMET/ports/1/subsystems/$NQN ]]; then rm -f "$NVMET/ports/1/subsystems/$NQN" || rc=1; fi
  if [[ -d $NVMET/ports/1 ]]; then rmdir "$NVMET/ports/1" || rc=1; fi
  if [[ -d $s/namespaces/1 ]]; then { echo 0 > "$s/namespaces/1/enable" && rmdir "$s/namespaces/1"; } || rc=1; fi
  if [[ -d $s ]]; then rmdir "$s" || rc=1; fi
  if [[ -n $loop ]]; then losetup -d "$loop" || rc=1; loop=""; fi
  if mountpoint -q "$LUNS"; then umount "$LUNS" || rc=1; fi
  ((rc == 0)) || echo "the target could not be taken down"
  return $rc
}
# The suite's time limit sends TERM: exit through the EXIT trap, which takes everything down.
trap 'exit 143' TERM
trap take_down EXIT

echo "kernel $(uname -r)"
modprobe configfs; mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
modprobe -a nvmet nvmet-tcp nvme-tcp loop || exit 1
mkdir -p "$LUNS" && mount -t tmpfs -o size=256m bn-nvme-resv "$LUNS" || exit 1
truncate -s 64M "$LUNS/ns1.img" && loop=$(losetup -f --show "$LUNS/ns1.img") || exit 1
mkdir "$s" && echo 1 > "$s/attr_allow_any_host" && mkdir "$s/namespaces/1" || exit 1
[[ -e $s/namespaces/1/resv_enable ]] || { echo "this kernel's nvmet has no resv_enable: no reservations"; exit 3; }
echo "$loop" > "$s/namespaces/1/device_path" && echo 1 > "$s/namespaces/1/resv_enable" \
  && echo 1 > "$s/namespaces/1/enable" || exit 1
mkdir "$NVMET/ports/1" && echo tcp > "$NVMET/ports/1/addr_trtype" && echo ipv4 > "$NVMET/ports/1/addr_adrfam" \
  && echo 127.0.0.1 > "$NVMET/ports/1/addr_traddr" && echo 4420 > "$NVMET/ports/1/addr_trsvcid" \
  && ln -s "$s" "$NVMET/ports/1/subsystems/$NQN" || exit 1
vm_wait "nvmet-tcp listening on 4420" 20 vm_tcp_listening 4420 || exit 1
devices=()
for host in a b; do
  id=$(printf '6b9c0f3e-5d0a-4b8e-9c1d-00000000000%s' "$host")
  # Straight to the kernel's fabrics device, as the plugin connects: nvme-cli 2.3 takes the second host's connect
  # to the same portal for the first's ("already connected").
  exec 3<>/dev/nvme-fabrics || exit 1
  echo "transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn=$NQN,hostnqn=nqn.2014-08.org.nvmexpress:uuid:$id,hostid=$id" >&3 \
    || exit 1
  read -r answer <&3; exec 3>&-
  echo "host $host: $answer"
done
two_namespaces() { [[ $(find /sys/block -maxdepth 1 -name 'nvme*n1' | wc -l) == 2 ]]; }
vm_wait "two namespaces" 30 two_namespaces || exit 1
for c in /sys/class/nvme/nvme*; do
  echo "${c##*/}: $(cat "$c/hostnqn") $(cat "$c/state")"
  devices+=("/dev/${c##*/}n1")
done
nvme list
"$JAVA" -cp "$PLUGIN_JAR:$PROBE_JAR" NvmeReservationProbe "${devices[@]}"
rc=$?
nvme resv-report "${devices[0]}" --eds || true
take_down || rc=$((rc + 1))
trap - EXIT
echo "nvme-reservations: $rc failures"
exit $rc
