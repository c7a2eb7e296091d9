package dev.blocknode.transport.fc;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.Wwid;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.KeyFormats;
import dev.blocknode.transport.KeyProblems;
import dev.blocknode.transport.WwidKeys;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

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

    /** Whether {@code lun} is one the kernel's scan attribute takes (KeyFormats.FC_LUN; a journal's entry too). */
    static boolean isLun(long lun) {
        return lun >= 0 && KeyFormats.FC_LUN.accepts(Long.toString(lun));
    }

    boolean scansTargets() {
        return !targetWwpns.isEmpty();
    }

    /**
     * @throws VolumeException INVALID_ARGUMENT naming every malformed or missing key
     */
    static FcVolumeSpec parse(AttachRequest request) throws VolumeException {
        return KeyProblems.parsed(problems -> read(request, problems));
    }

    /** The spec, or empty after recording in {@code problems} every key that is missing or malformed. */
    static Optional<FcVolumeSpec> read(AttachRequest request, KeyProblems problems) throws VolumeException {
        int before = problems.size();
        Optional<String> targets = request.key(TARGET_WWNS);
        Optional<String> wwidList = request.key(WWIDS);
        if (targets.isEmpty() && wwidList.isEmpty()) {
            problems.add("volume_context." + TARGET_WWNS + " (with " + LUN + ") or volume_context." + WWIDS
                    + " is required by the fc transport");
        }
        List<Wwid> wwids = wwidList.isPresent()
                ? problems.check(() -> WwidKeys.list(WWIDS, wwidList.get())).orElse(List.of()) : List.of();
        // "wwid" is the identity when given; otherwise any of "wwids" is.
        Optional<String> single = request.key(WWID);
        List<Wwid> expected = single.isPresent()
                ? problems.check(() -> WwidKeys.list(WWID, single.get())).orElse(List.of()) : wwids;
        List<String> wwpns = List.of();
        OptionalLong lun = OptionalLong.empty();
        if (targets.isPresent()) {
            wwpns = problems.check(() -> wwpns(targets.get())).orElse(List.of());
            Optional<String> lunText = request.key(LUN);
            if (lunText.isEmpty()) {
                problems.add("volume_context." + LUN + " is required with volume_context." + TARGET_WWNS);
            } else if (!KeyFormats.FC_LUN.accepts(lunText.get())) {
                problems.add("volume_context." + LUN + " must be a non-negative decimal number of at most 16 digits,"
                        + " got \"" + lunText.get() + "\"");
            } else {
                lun = OptionalLong.of(Long.parseLong(lunText.get()));
            }
        }
        if (problems.size() > before) {
            return Optional.empty();
        }
        return Optional.of(targets.isEmpty() ? new FcVolumeSpec(List.of(), OptionalLong.empty(), wwids, expected)
                : new FcVolumeSpec(wwpns, lun, List.of(), expected));
    }

    private static List<String> wwpns(String value) throws VolumeException {
        LinkedHashSet<String> wwpns = new LinkedHashSet<>();
        for (String entry : value.split(",", -1)) {
            if (!KeyFormats.WWPN.accepts(entry.strip())) {
                throw VolumeException.invalid("volume_context." + TARGET_WWNS + " has a malformed entry: "
                        + (entry.isBlank() ? "an empty entry" : "\"" + entry.strip() + "\" is not a WWPN ("
                        + KeyFormats.WWPN.description() + ")"));
            }
            wwpns.add(Wwpn.normalize(entry));
        }
        return List.copyOf(wwpns);
    }
}
