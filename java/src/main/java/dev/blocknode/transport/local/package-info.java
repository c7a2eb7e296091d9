/**
 * A device already on the node, named by path: loop devices for the demo and the tests, or disks a node
 * sees directly. Nothing to attach, so nothing is ever detached. May use os, scsi's WWID type (a named WWID is
 * still checked) and the utilities.
 */
package dev.blocknode.transport.local;
