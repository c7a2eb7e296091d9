package dev.blocknode.transport;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.Wwid;

import java.util.ArrayList;
import java.util.List;

/**
 * The volume_context keys that name a LUN by its WWID ({@code wwid}, FC's {@code wwids}), checked by
 * {@link KeyFormats#WWID} before scsi.Wwid parses them: a WWID that cannot be one is refused before anything is
 * attached, rather than found to be the wrong LUN after.
 */
public final class WwidKeys {

    private WwidKeys() {
    }

    /**
     * @throws VolumeException INVALID_ARGUMENT naming the key, for a value that is not a WWID
     */
    public static Wwid one(String key, String value) throws VolumeException {
        if (!KeyFormats.WWID.accepts(value)) {
            throw VolumeException.invalid("volume_context." + key + " " + notAWwid(value));
        }
        return Wwid.parse(value);
    }

    /**
     * Each of a comma-separated list, without repeats.
     *
     * @throws VolumeException INVALID_ARGUMENT naming the key and the first malformed entry
     */
    public static List<Wwid> list(String key, String value) throws VolumeException {
        List<Wwid> wwids = new ArrayList<>();
        for (String entry : value.split(",", -1)) {
            String item = entry.strip();
            if (item.isEmpty() || !KeyFormats.WWID.accepts(item)) {
                throw VolumeException.invalid("volume_context." + key + " has a malformed entry: "
                        + (item.isEmpty() ? "an empty entry" : notAWwid(item)));
            }
            Wwid wwid = Wwid.parse(item);
            if (!wwids.contains(wwid)) {
                wwids.add(wwid);
            }
        }
        return List.copyOf(wwids);
    }

    /**
     * A local device's {@code wwid}: free text as its sysfs says (NVMe's nvme. and uuid. forms), but a SCSI WWID
     * when it starts like one.
     *
     * @throws VolumeException INVALID_ARGUMENT naming the key
     */
    public static void device(String key, String value) throws VolumeException {
        if (!KeyFormats.DEVICE_WWID.accepts(value)) {
            throw VolumeException.invalid("volume_context." + key + " " + notAWwid(value));
        }
    }

    private static String notAWwid(String value) {
        String shown = value.length() > 80 ? value.substring(0, 80) + "..." : value;
        return "\"" + shown + "\" is not a WWID (" + KeyFormats.WWID.description() + ")";
    }
}
