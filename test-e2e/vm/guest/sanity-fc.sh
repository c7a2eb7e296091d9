#!/bin/bash
# sanity-fc: csi-sanity over Fibre Channel: sanity.sh with the test controller's fc backend (each volume a LUN
# of LIO's tcm_fc target on the array ports of fc-lib.sh's FCoE VN2VN fabric) and the plugin's fc transport.
# See sanity.sh.
export GUEST_SANITY_BACKEND=fc BN_SCENARIO=${BN_SCENARIO:-sanity-fc}
exec bash "$(dirname "$(readlink -f "$0")")/sanity.sh" "$@"
