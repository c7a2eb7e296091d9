package dev.blocknode.volume;

import java.util.OptionalLong;

/**
 * Usage and health of a volume at a path. Inode figures are empty for block volumes; {@code abnormal}
 * comes with a message an operator can act on.
 */
public record VolumeStats(long totalBytes, OptionalLong availableBytes, OptionalLong usedBytes,
                          OptionalLong totalInodes, OptionalLong availableInodes, OptionalLong usedInodes,
                          boolean abnormal, String condition) {
}
