package dev.blocknode.multipath;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.HostPaths;
import dev.blocknode.scsi.ScsiDeviceState;
import dev.blocknode.scsi.Sysfs;
import dev.blocknode.scsi.Wwid;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * Finds multipath maps through sysfs alone (no multipathd, no dmsetup): /sys/class/block/dm-N/dm/uuid is
 * "mpath-" + WWID for a multipath map (a kpartx partition on one is "partN-mpath-..."), dm/name its name,
 * slaves/ its paths and holders/ what is stacked on it.
 */
public final class MultipathMaps {

    private static final Logger LOG = Logger.getLogger(MultipathMaps.class.getName());

    private final HostPaths paths;

    public MultipathMaps(HostPaths paths) {
        this.paths = paths;
    }

    /** Every multipath map of the node. */
    public List<MultipathMap> all() throws IOException {
        List<MultipathMap> maps = new ArrayList<>();
        for (String entry : Sysfs.list(paths.sys().resolve("class/block"))) {
            if (entry.startsWith("dm-")) {
                read(entry).ifPresent(maps::add);
            }
        }
        return maps;
    }

    /** The map whose WWID matches (a node has at most one per LUN). */
    public Optional<MultipathMap> byWwid(Wwid wwid) throws IOException {
        for (MultipathMap map : all()) {
            if (map.wwid().matches(wwid)) {
                return Optional.of(map);
            }
        }
        return Optional.empty();
    }

    /**
     * The map named {@code name}, looked for first at block device {@code recorded} (where a staging record says
     * it is: the staged device of a multipathed LUN is its map), without reading the node's other maps; they are
     * read only when it is not there.
     */
    public Optional<MultipathMap> byName(String name, DeviceNumber recorded) throws IOException {
        Optional<MultipathMap> there = atDevice(recorded).filter(map -> map.name().equals(name));
        return there.isPresent() ? there : byName(name);
    }

    public Optional<MultipathMap> byName(String name) throws IOException {
        for (MultipathMap map : all()) {
            if (map.name().equals(name)) {
                return Optional.of(map);
            }
        }
        return Optional.empty();
    }

    /**
     * The map that is block device {@code number} (through /sys/dev/block/MAJ:MIN, no walk), when that device
     * exists and is a multipath map.
     */
    public Optional<MultipathMap> atDevice(DeviceNumber number) throws IOException {
        Path entry = paths.sysBlockDevice(number);
        Path target;
        try {
            target = entry.toRealPath();
        } catch (IOException e) {
            if (Sysfs.isGone(e)) {
                return Optional.empty();
            }
            throw e;
        }
        return read(target.getFileName().toString()).filter(map -> map.number().equals(number));
    }

    /** The multipath map that path device {@code pathName} ("sdb") belongs to, if any. */
    public Optional<MultipathMap> holding(String pathName) throws IOException {
        for (String holder : Sysfs.list(classBlock(pathName).resolve("holders"))) {
            Optional<MultipathMap> map = read(holder);
            if (map.isPresent()) {
                return map;
            }
        }
        return Optional.empty();
    }

    /** The map with kernel name {@code kernelName} ("dm-3"), when it exists and is a multipath map. */
    public Optional<MultipathMap> read(String kernelName) throws IOException {
        Path dir = classBlock(kernelName);
        Optional<String> uuid = Sysfs.read(dir.resolve("dm/uuid"));
        if (uuid.isEmpty() || !uuid.get().startsWith(MultipathMap.UUID_PREFIX)) {
            return Optional.empty();
        }
        Wwid wwid;
        try {
            wwid = Wwid.parse(uuid.get().substring(MultipathMap.UUID_PREFIX.length()));
        } catch (IllegalArgumentException unreadable) {
            LOG.warning(() -> kernelName + " has a multipath uuid this code cannot read: " + uuid.get());
            return Optional.empty();
        }
        Optional<String> name = Sysfs.read(dir.resolve("dm/name"));
        Optional<String> dev = Sysfs.read(dir.resolve("dev"));
        if (name.isEmpty() || dev.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(new MultipathMap(kernelName, name.get(), wwid, DeviceNumber.parse(dev.get()),
                Sysfs.list(dir.resolve("slaves"))));
    }

    /** Re-reads a map: empty once it is gone (or its kernel name now belongs to another map). */
    public Optional<MultipathMap> refresh(MultipathMap map) throws IOException {
        return read(map.kernelName()).filter(now -> now.wwid().equals(map.wwid()));
    }

    /** What is stacked on the map (/sys/class/block/dm-N/holders/*), each named as {@link #describe} does. */
    public List<String> holders(MultipathMap map) throws IOException {
        List<String> holders = new ArrayList<>();
        for (String holder : Sysfs.list(classBlock(map.kernelName()).resolve("holders"))) {
            holders.add(describe(holder));
        }
        return holders;
    }

    /** A block device for a message: "dm-7 (vg0-data)" for a dm device, else its kernel name. */
    public String describe(String kernelName) throws IOException {
        Optional<String> dmName = Sysfs.read(classBlock(kernelName).resolve("dm/name"));
        return dmName.map(n -> kernelName + " (" + n + ")").orElse(kernelName);
    }

    /** The kernel's state of each path of the map, for volume health. */
    public List<PathState> pathStates(MultipathMap map) throws IOException {
        List<PathState> states = new ArrayList<>();
        for (String slave : map.slaves()) {
            states.add(pathState(slave));
        }
        return states;
    }

    /** The kernel's state of one SCSI path device, mapped or not; GONE when it has left sysfs. */
    public PathState pathState(String kernelName) throws IOException {
        return new PathState(kernelName, Sysfs.read(classBlock(kernelName).resolve("device/state"))
                .map(ScsiDeviceState::parse).orElse(ScsiDeviceState.GONE));
    }

    private Path classBlock(String name) {
        return paths.sys().resolve("class/block").resolve(name);
    }
}
