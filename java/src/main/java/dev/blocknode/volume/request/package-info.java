/**
 * What the CSI node calls ask of the volume layer, as csi hands it over: one record per call (Requests) and a
 * volume's capability (its AccessType, mount or block, and AccessMode). Values only, so both sides of the volume
 * layer and csi can use them; it may use volume.filesystem and the utilities.
 */
package dev.blocknode.volume.request;
