/**
 * The command-line tools in the same jar: {@code blocknode client} (any CSI call on a socket),
 * {@code blocknode status} (what the node holds, read from the records, the mount table and sysfs, with the plugin
 * up or down), {@code blocknode doctor} (the node's readiness) and {@code blocknode pv} (PV YAML for existing LUNs,
 * checked by NodeStageVolume's own rules). Entry points like Main: they may use any layer, and nothing uses them.
 */
package dev.blocknode.client;
