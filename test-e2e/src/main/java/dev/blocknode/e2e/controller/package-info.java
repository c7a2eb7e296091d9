/**
 * The test controller: volumes as sparse files handed to the node plugin as loop devices (host), tgt iSCSI
 * LUNs, nvmet NVMe/TCP namespaces or LIO tcm_fc LUNs (the VM tier), one backend per kind of storage. It uses the
 * plugin's own key types (IscsiVolumeSpec, Wwpn) and os.exec, so the volume_context it writes is what they read.
 */
package dev.blocknode.e2e.controller;
