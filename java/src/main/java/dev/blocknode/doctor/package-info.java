/**
 * {@code blocknode doctor}: the node's readiness for each transport before any volume is staged (iSCSI,
 * multipath, Fibre Channel, NVMe/TCP, and the kernel features and kubelet root the plugin uses), as findings of
 * ok, warning or error, each with its fix in one line. Read-only: it reads the host's files through
 * {@link dev.blocknode.os.HostPaths} and runs only tools that report ({@code iscsiadm --version}, {@code
 * multipathd show config}) through {@link dev.blocknode.os.exec.CommandRunner}. The command and the plugin's own
 * run at start (DoctorAtStart: logged and exported as metrics) share it. Read the same way: the plugin's own health, which CSI
 * Probe answers from memory (HealthCheck, CachedHealth), and the node's initiator names as info series
 * (NodeIdentityInfo).
 */
package dev.blocknode.doctor;
