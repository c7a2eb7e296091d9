#!/bin/bash
# sanity-fc: csi-sanity over Fibre Channel: sanity.sh with the test controller's fc backend (each volume a LUN
# of LIO's tcm_fc target on the array ports of fc-lib.sh's FCoE VN2VN fabric) and the plugin's fc transport.
# See sanity.sh.
# vm-san: own     (udevd, multipathd and fc-lib.sh's fabric; no iSCSI daemon)
# vm-limit: 800   (csi-sanity's runs: 283-476 s on a loaded host, see the README)
export GUEST_SANITY_BACKEND=fc BN_SCENARIO=${BN_SCENARIO:-sanity-fc}
exec bash "$(dirname "$(readlink -f "$0")")/sanity.sh" "$@"
