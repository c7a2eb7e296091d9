#!/bin/bash
# sanity-nvme: csi-sanity over NVMe/TCP: sanity.sh with the test controller's nvmet backend (each volume a
# namespace of a subsystem on the kernel's NVMe target) and the plugin's nvme-tcp transport. See sanity.sh.
# vm-san: own     (udevd and nvmet only; no iSCSI daemon)
# vm-limit: 800   (csi-sanity's runs: a suite's limit for it, what its own boot had)
# One access type, mount, unless GUEST_SANITY_ACCESS_TYPES says otherwise: the block run is the same transport path
# without mkfs (half of the suite's time), and this transport's raw block volumes are staged, published, written
# and read by its own scenario; the iSCSI sanity boot and the host tier run both access types.
export GUEST_SANITY_BACKEND=nvmet BN_SCENARIO=${BN_SCENARIO:-sanity-nvme}
export GUEST_SANITY_ACCESS_TYPES=${GUEST_SANITY_ACCESS_TYPES:-mount}
exec bash "$(dirname "$(readlink -f "$0")")/sanity.sh" "$@"
