package dev.blocknode.volume;

import dev.blocknode.volume.filesystem.FilesystemType;

/**
 * The node's filesystem choices: the filesystem a blank device gets when the request names none, and whether an
 * ext4 filesystem a stage finds is preened before its mount (--fsck).
 */
public record FilesystemSettings(FilesystemType defaultFilesystem, boolean fsckOnNode) {
}
