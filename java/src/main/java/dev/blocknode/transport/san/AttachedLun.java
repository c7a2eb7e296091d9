package dev.blocknode.transport.san;

import dev.blocknode.os.DeviceNumber;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.scsi.Wwid;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * A SCSI LUN in use on this node: its WWID (the map's, when multipathed), its paths, its map, the device to
 * use, and the addresses where a path was expected but did not appear. Round-trips through a staging
 * record's attachment details (plain strings, no secrets), so it can be torn down after any restart.
 */
public record AttachedLun(Wwid wwid, List<LunPath> paths, Optional<String> mapName, Path device, DeviceNumber number,
                          List<ScsiAddress> missing) {

    /** One path device of the LUN. */
    public record LunPath(ScsiAddress address, String name) {

        public LunPath {
            if (!KERNEL_NAME.matcher(name).matches()) {
                throw new IllegalArgumentException("not a block device kernel name: \"" + name + "\"");
            }
        }

        @Override
        public String toString() {
            return address + "=" + name;
        }
    }

    public static final String WWID = "wwid";
    public static final String PATHS = "paths";
    public static final String MAP = "multipathMap";
    public static final String MISSING = "missingPaths";

    /** Kernel names end up in sysfs paths: nothing that could climb out of a directory. */
    private static final Pattern KERNEL_NAME = Pattern.compile("[A-Za-z0-9_-]+");

    public AttachedLun {
        paths = List.copyOf(paths);
        missing = List.copyOf(missing);
    }

    /** The kernel names of the path disks, as multipath's PathHealth takes them. */
    public List<String> pathNames() {
        return paths.stream().map(LunPath::name).toList();
    }

    /**
     * The LUN with {@code returned} among its paths: each replaces the recorded path at its address (the kernel
     * may have given the returned disk another name) and is no longer missing.
     */
    public AttachedLun withPaths(List<LunPath> returned) {
        List<ScsiAddress> at = returned.stream().map(LunPath::address).toList();
        List<LunPath> now = new ArrayList<>(paths.stream().filter(p -> !at.contains(p.address())).toList());
        now.addAll(returned);
        return new AttachedLun(wwid, now, mapName, device, number,
                missing.stream().filter(a -> !at.contains(a)).toList());
    }

    /** The attachment details to persist: what {@link #fromDetails} needs. */
    public Map<String, String> details() {
        Map<String, String> details = new LinkedHashMap<>();
        details.put(WWID, wwid.multipathForm());
        details.put(PATHS, String.join(",", paths.stream().map(LunPath::toString).toList()));
        mapName.ifPresent(name -> details.put(MAP, name));
        if (!missing.isEmpty()) {
            details.put(MISSING, String.join(",", missing.stream().map(ScsiAddress::toString).toList()));
        }
        return details;
    }

    /**
     * Reads details written by {@link #details}.
     *
     * @throws IllegalArgumentException naming the key that is missing or malformed
     */
    public static AttachedLun fromDetails(Map<String, String> details, Path device, DeviceNumber number) {
        String wwid = details.get(WWID);
        if (wwid == null || wwid.isBlank()) {
            throw new IllegalArgumentException("attachment detail \"" + WWID + "\" is missing");
        }
        List<LunPath> paths = new ArrayList<>();
        for (String entry : entries(details.get(PATHS))) {
            int equals = entry.indexOf('=');
            if (equals <= 0) {
                throw new IllegalArgumentException("attachment detail \"" + PATHS + "\" has a malformed entry \""
                        + entry + "\" (expected H:C:T:L=name)");
            }
            paths.add(new LunPath(ScsiAddress.parse(entry.substring(0, equals)), entry.substring(equals + 1).strip()));
        }
        List<ScsiAddress> missing = new ArrayList<>();
        for (String entry : entries(details.get(MISSING))) {
            missing.add(ScsiAddress.parse(entry));
        }
        String map = details.get(MAP);
        return new AttachedLun(Wwid.parse(wwid), paths, Optional.ofNullable(map).map(String::strip)
                .filter(m -> !m.isEmpty()), device, number, missing);
    }

    private static List<String> entries(String value) {
        if (value == null || value.isBlank()) {
            return List.of();
        }
        return List.of(value.split(",")).stream().map(String::strip).filter(s -> !s.isEmpty()).toList();
    }
}
