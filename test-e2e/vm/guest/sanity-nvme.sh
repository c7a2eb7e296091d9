#!/bin/bash
# sanity-nvme: csi-sanity over NVMe/TCP: sanity.sh with the test controller's nvmet backend (each volume a
# namespace of a subsystem on the kernel's NVMe target) and the plugin's nvme-tcp transport. See sanity.sh.
# vm-san: own     (udevd and nvmet only; no iSCSI daemon)
# vm-limit: 800   (csi-sanity's runs: a suite's limit for it, what its own boot had)
export GUEST_SANITY_BACKEND=nvmet BN_SCENARIO=${BN_SCENARIO:-sanity-nvme}
exec bash "$(dirname "$(readlink -f "$0")")/sanity.sh" "$@"
