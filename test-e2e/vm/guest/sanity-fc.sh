#!/bin/bash
# sanity-fc: csi-sanity over Fibre Channel: sanity.sh with the test controller's fc backend (each volume a LUN
# of LIO's tcm_fc target on the array ports of fc-lib.sh's FCoE VN2VN fabric) and the plugin's fc transport.
# See sanity.sh.
# vm-san: own     (udevd, multipathd and fc-lib.sh's fabric; no iSCSI daemon)
# vm-limit: 800   (csi-sanity's runs: 283-476 s on a loaded host, see the README)
# One access type, mount, unless GUEST_SANITY_ACCESS_TYPES says otherwise: the block run is the same transport path
# without mkfs (half of the suite's time), and this transport's raw block volumes are staged, published, written
# and read by its own scenario; the iSCSI sanity boot and the host tier run both access types.
export GUEST_SANITY_BACKEND=fc BN_SCENARIO=${BN_SCENARIO:-sanity-fc}
export GUEST_SANITY_ACCESS_TYPES=${GUEST_SANITY_ACCESS_TYPES:-mount}
exec bash "$(dirname "$(readlink -f "$0")")/sanity.sh" "$@"
