package dev.blocknode.transport.fc;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.Wwid;
import dev.blocknode.transport.AttachRequest;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.regex.Pattern;

/**
 * An FC volume's keys, validated: either target WWPNs and a LUN (the node scans for it), or WWIDs of a LUN
 * already visible. {@code wwid} (and {@code wwids} given along with targets) are the identity the LUN must
 * show. Each malformed value is INVALID_ARGUMENT naming its key.
 */
record FcVolumeSpec(List<String> targetWwpns, OptionalLong lun, List<Wwid> wwids, List<Wwid> expected) {

    static final String TARGET_WWNS = "targetWWNs";
    static final String LUN = "lun";
    static final String WWIDS = "wwids";
    static final String WWID = "wwid";

    /** The kernel's scan attribute takes the LUN as at most 16 decimal digits. */
    private static final Pattern LUN_DIGITS = Pattern.compile("[0-9]{1,16}");

    /** Whether {@code lun} is one the kernel's scan attribute takes (as {@link #LUN_DIGITS} spells it). */
    static boolean isLun(long lun) {
        return lun >= 0 && Long.toString(lun).length() <= 16;
    }

    boolean scansTargets() {
        return !targetWwpns.isEmpty();
    }

    static FcVolumeSpec parse(AttachRequest request) throws VolumeException {
        Optional<String> targets = request.key(TARGET_WWNS);
        Optional<String> wwidList = request.key(WWIDS);
        if (targets.isEmpty() && wwidList.isEmpty()) {
            throw VolumeException.invalid("volume_context." + TARGET_WWNS + " (with " + LUN + ") or volume_context."
                    + WWIDS + " is required by the fc transport");
        }
        List<Wwid> wwids = wwidList.isPresent() ? wwids(WWIDS, wwidList.get()) : List.of();
        // "wwid" is the identity when given; otherwise any of "wwids" is.
        Optional<String> single = request.key(WWID);
        List<Wwid> expected = single.isPresent() ? wwids(WWID, single.get()) : wwids;
        if (targets.isEmpty()) {
            return new FcVolumeSpec(List.of(), OptionalLong.empty(), wwids, expected);
        }
        List<String> wwpns = wwpns(targets.get());
        String lunText = request.key(LUN).orElseThrow(() -> VolumeException.invalid(
                "volume_context." + LUN + " is required with volume_context." + TARGET_WWNS));
        if (!LUN_DIGITS.matcher(lunText).matches()) {
            throw VolumeException.invalid("volume_context." + LUN + " must be a non-negative decimal number of at most"
                    + " 16 digits, got \"" + lunText + "\"");
        }
        return new FcVolumeSpec(wwpns, OptionalLong.of(Long.parseLong(lunText)), List.of(), expected);
    }

    private static List<String> wwpns(String value) throws VolumeException {
        LinkedHashSet<String> wwpns = new LinkedHashSet<>();
        for (String entry : value.split(",", -1)) {
            try {
                wwpns.add(Wwpn.normalize(entry));
            } catch (IllegalArgumentException e) {
                throw VolumeException.invalid("volume_context." + TARGET_WWNS + " has a malformed entry: "
                        + (entry.isBlank() ? "an empty entry" : e.getMessage()));
            }
        }
        return List.copyOf(wwpns);
    }

    private static List<Wwid> wwids(String key, String value) throws VolumeException {
        List<Wwid> wwids = new ArrayList<>();
        for (String entry : value.split(",", -1)) {
            try {
                Wwid wwid = Wwid.parse(entry);
                if (!wwids.contains(wwid)) {
                    wwids.add(wwid);
                }
            } catch (IllegalArgumentException e) {
                throw VolumeException.invalid("volume_context." + key + " has a malformed entry: "
                        + (entry.isBlank() ? "an empty entry" : e.getMessage()));
            }
        }
        return List.copyOf(wwids);
    }
}
