package dev.blocknode.volume.read;

import java.util.List;
import java.util.OptionalLong;

/**
 * Usage and health of a volume at a path. Inode figures are empty for block volumes; {@code problems} is empty
 * for a healthy volume, and each problem comes with a message an operator can act on.
 */
public record VolumeStats(long totalBytes, OptionalLong availableBytes, OptionalLong usedBytes,
                          OptionalLong totalInodes, OptionalLong availableInodes, OptionalLong usedInodes,
                          List<HealthProblem> problems) {

    public VolumeStats {
        problems = List.copyOf(problems);
    }

    /** These stats with {@code first} ahead of their other problems. */
    public VolumeStats withProblemFirst(HealthProblem first) {
        List<HealthProblem> all = new java.util.ArrayList<>(problems.size() + 1);
        all.add(first);
        all.addAll(problems);
        return new VolumeStats(totalBytes, availableBytes, usedBytes, totalInodes, availableInodes, usedInodes, all);
    }

    public boolean abnormal() {
        return !problems.isEmpty();
    }

    /** The problems' messages (VolumeCondition's), empty when there is none. */
    public String condition() {
        return HealthProblem.summary(problems);
    }
}
