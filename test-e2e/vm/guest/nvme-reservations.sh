#!/bin/bash
# NVMe reservations against the kernel's nvmet (Linux >= 6.13, namespace attribute resv_enable), by hand for now
# (issue 48): boots only on a kernel that has them, e.g.
#
#   VM_KERNEL_ROOT=$(test-e2e/vm/fetch-kernel.sh 7.3.4+deb13-amd64) VM_APPEND=nvme_core.multipath=N \
#     test-e2e/vm/run-guest.sh test-e2e/vm/guest/nvme-reservations.sh
#
# after `make unit` (the classes) and with NvmeReservationProbe compiled into $VM_WORK/nvme-probe (see the probe's
# header). One subsystem, one namespace with reservations on, one port; two hosts (own host NQN and identifier each)
# connected through /dev/nvme-fabrics; then the probe runs the plugin's own NvmeReservations through the passthrough ioctl.
HERE=$(dirname "$(readlink -f "$0")")
source "$HERE/lib.sh"
REPO=${VM_REPO:-$(cd "$HERE/../../.." && pwd)}
JAVA=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java
NQN=nqn.2024-01.dev.blocknode:nvme-resv
NVMET=/sys/kernel/config/nvmet
LUNS=/srv/bn-nvme-resv

echo "kernel $(uname -r)"
modprobe configfs; mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
modprobe -a nvmet nvmet-tcp nvme-tcp loop || exit 1
s=$NVMET/subsystems/$NQN
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
"$JAVA" -cp "$REPO/native/target/classes:$REPO/java/target/classes:$VM_WORK/nvme-probe" NvmeReservationProbe \
  "${devices[@]}"
rc=$?
nvme resv-report "${devices[0]}" --eds || true
for c in /sys/class/nvme/nvme*; do echo 1 > "$c/delete_controller"; done
exit $rc
