/**
 * LUKS2 encryption of a volume on the node: what a volume asks for (its volume_context key and the passphrase from
 * its NodeStageVolume secrets), the name of its dm-crypt mapping, and the cryptsetup commands that format, open and
 * close it, the passphrase always on standard input. Part of the volume layer; it may use os.exec, transport's
 * AttachRequest (the contexts) and the utilities.
 */
package dev.blocknode.volume.encryption;
