package dev.blocknode.volume;

import dev.blocknode.multipath.AttachedLun;
import dev.blocknode.multipath.MultipathMap;
import dev.blocknode.multipath.MultipathMaps;
import dev.blocknode.multipath.PathState;
import dev.blocknode.os.HostPaths;
import dev.blocknode.state.v1.StagingRecord;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The health of a SAN volume's paths, for VolumeCondition: a multipath map keeps serving I/O on the paths
 * it has left, so a lost path is invisible to the filesystem and must be reported from sysfs. Reads
 * sysfs only (stats are asked for every volume once a minute).
 */
final class PathHealth {

    private PathHealth() {
    }

    /** What is wrong with the volume's paths, or empty when all recorded paths serve (or it has no map). */
    static Optional<String> problem(HostPaths paths, StagingRecord record) throws IOException {
        String mapName = record.getAttachmentMap().get(AttachedLun.MAP);
        if (mapName == null || mapName.isEmpty()) {
            return Optional.empty();
        }
        MultipathMaps maps = new MultipathMaps(paths);
        Optional<MultipathMap> map = maps.byName(mapName);
        if (map.isEmpty()) {
            return Optional.of("multipath map " + mapName + " of the volume is gone");
        }
        List<String> problems = new ArrayList<>();
        List<PathState> states = maps.pathStates(map.get());
        for (PathState state : states) {
            if (!state.healthy()) {
                problems.add(state.name() + " is " + state.state().sysfsName());
            }
        }
        for (String recorded : recordedPathNames(record)) {
            if (!map.get().slaves().contains(recorded)) {
                problems.add(recorded + " is no longer in the map");
            }
        }
        if (problems.isEmpty()) {
            return Optional.empty();
        }
        long serving = states.stream().filter(PathState::healthy).count();
        return Optional.of("multipath map " + mapName + " serves on " + serving + " path(s); "
                + String.join(", ", problems));
    }

    /** "1:0:0:3=sdb,2:0:1:3=sdc" -> [sdb, sdc] */
    private static List<String> recordedPathNames(StagingRecord record) {
        List<String> names = new ArrayList<>();
        String paths = record.getAttachmentMap().getOrDefault(AttachedLun.PATHS, "");
        for (String entry : paths.split(",")) {
            int eq = entry.indexOf('=');
            if (eq > 0 && eq < entry.length() - 1) {
                names.add(entry.substring(eq + 1).strip());
            }
        }
        return names;
    }
}
