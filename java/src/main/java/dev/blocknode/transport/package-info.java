/**
 * The Transport seam: how a block device reaches the node (attach, detach, path health, fencing) and how one
 * is chosen from volume_context. Used by volume and the entry points; transports may use multipath, scsi, os and
 * the utilities, never volume or state (they ask about records through StagedVolumes).
 */
package dev.blocknode.transport;
