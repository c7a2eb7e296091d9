package dev.blocknode.multipath;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.HostPaths;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The health of a SAN volume's paths, for VolumeCondition and the path gauges: a multipath map keeps
 * serving I/O on the paths it has left, so a lost path is invisible to the filesystem and must be read
 * from sysfs. Reads sysfs only (stats are asked for every volume once a minute, metrics on every scrape).
 */
public final class PathHealth {

    /**
     * The paths of one SAN volume: how many serve I/O, and what is wrong with each of the others.
     *
     * @param map the multipath map's name, or empty for a single-path volume without a map
     */
    public record Report(Optional<String> map, int serving, List<String> failures) {

        public Report {
            failures = List.copyOf(failures);
        }

        public int failed() {
            return failures.size();
        }

        /** The VolumeCondition message, or empty when every path serves. */
        public Optional<String> problem() {
            if (failures.isEmpty()) {
                return Optional.empty();
            }
            String subject = map.map(name -> "multipath map " + name).orElse("the volume");
            return Optional.of(subject + " serves on " + serving + " path(s); " + String.join(", ", failures));
        }
    }

    private PathHealth() {
    }

    /**
     * A LUN's paths as the kernel sees them now; empty for a LUN with neither a map nor a recorded path.
     * Takes names, not the SAN transports' record of the LUN, so that multipath stays below them.
     *
     * @param recordedMap the map the LUN was used through, empty when it was used through its path directly
     * @param recorded    the kernel names of the path disks recorded at attach
     */
    public static Optional<Report> inspect(HostPaths paths, Optional<String> recordedMap, List<String> recorded)
            throws IOException {
        return inspect(paths, recordedMap, recorded, Optional.empty());
    }

    /**
     * As {@link #inspect(HostPaths, Optional, List)}, with the map looked for first at the volume's recorded device
     * number: a sweep of every volume's stats then reads each volume's map, not every map once per volume.
     */
    public static Optional<Report> inspect(HostPaths paths, Optional<String> recordedMap, List<String> recorded,
                                           Optional<DeviceNumber> recordedDevice) throws IOException {
        MultipathMaps maps = new MultipathMaps(paths);
        if (recordedMap.isEmpty()) {
            return recorded.isEmpty() ? Optional.empty() : Optional.of(unmapped(maps, recorded));
        }
        String mapName = recordedMap.get();
        Optional<MultipathMap> map = recordedDevice.isPresent() ? maps.byName(mapName, recordedDevice.get())
                : maps.byName(mapName);
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
}
