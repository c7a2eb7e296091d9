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
 * The health of a SAN volume's paths, for VolumeCondition and the path gauges: a multipath map keeps
 * serving I/O on the paths it has left, so a lost path is invisible to the filesystem and must be read
 * from sysfs. Reads sysfs only (stats are asked for every volume once a minute, metrics on every scrape).
 */
final class PathHealth {

    /**
     * The paths of one SAN volume: how many serve I/O, and what is wrong with each of the others.
     *
     * @param map the multipath map's name, or empty for a single-path volume without a map
     */
    record Report(Optional<String> map, int serving, List<String> failures) {

        Report {
            failures = List.copyOf(failures);
        }

        int failed() {
            return failures.size();
        }

        /** The VolumeCondition message, or empty when every path serves. */
        Optional<String> problem() {
            if (failures.isEmpty()) {
                return Optional.empty();
            }
            String subject = map.map(name -> "multipath map " + name).orElse("the volume");
            return Optional.of(subject + " serves on " + serving + " path(s); " + String.join(", ", failures));
        }
    }

    private PathHealth() {
    }

    /** What is wrong with the volume's paths, or empty when all recorded paths serve (or it has none). */
    static Optional<String> problem(HostPaths paths, StagingRecord record) throws IOException {
        return inspect(paths, record).flatMap(Report::problem);
    }

    /** The volume's paths as the kernel sees them now; empty for a volume without SCSI paths (local). */
    static Optional<Report> inspect(HostPaths paths, StagingRecord record) throws IOException {
        MultipathMaps maps = new MultipathMaps(paths);
        List<String> recorded = recordedPathNames(record);
        String mapName = record.getAttachmentMap().getOrDefault(AttachedLun.MAP, "");
        if (mapName.isEmpty()) {
            return recorded.isEmpty() ? Optional.empty() : Optional.of(unmapped(maps, recorded));
        }
        Optional<MultipathMap> map = maps.byName(mapName);
        if (map.isEmpty()) {
            List<String> failures = new ArrayList<>();
            failures.add("multipath map " + mapName + " of the volume is gone");
            for (int i = 1; i < recorded.size(); i++) {
                failures.add(recorded.get(i) + " is gone with it");
            }
            return Optional.of(new Report(Optional.of(mapName), 0, failures));
        }
        List<String> failures = new ArrayList<>();
        int serving = 0;
        for (PathState state : maps.pathStates(map.get())) {
            if (state.healthy()) {
                serving++;
            } else {
                failures.add(state.name() + " is " + state.state().sysfsName());
            }
        }
        for (String name : recorded) {
            if (!map.get().slaves().contains(name)) {
                failures.add(name + " is no longer in the map");
            }
        }
        return Optional.of(new Report(Optional.of(mapName), serving, failures));
    }

    /** A SAN volume used through its path device(s) directly: each must still be running. */
    private static Report unmapped(MultipathMaps maps, List<String> recorded) throws IOException {
        List<String> failures = new ArrayList<>();
        int serving = 0;
        for (String name : recorded) {
            PathState state = maps.pathState(name);
            if (state.healthy()) {
                serving++;
            } else {
                failures.add(name + " is " + state.state().sysfsName());
            }
        }
        return new Report(Optional.empty(), serving, failures);
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
