package dev.blocknode.transport.iscsi;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.ContextList;
import dev.blocknode.transport.KeyFormats;
import dev.blocknode.transport.KeyProblems;
import dev.blocknode.transport.WwidKeys;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * The iSCSI volume a request names, checked key by key.
 *
 * <p>volume_context (or publish_context) keys: {@code targetPortal} (required), {@code portals} (more
 * portals of the same target: comma-separated, or a JSON-style list), {@code iqn} (required), {@code lun}
 * (required), {@code wwid} (optional: the LUN must report it), {@code iface} (optional open-iscsi
 * interface, default "default"), {@code replacementTimeout} (optional: seconds a broken session waits for a
 * relogin before its I/O fails; see {@link ReplacementTimeout}).
 */
public record IscsiVolumeSpec(List<Portal> portals, String iqn, long lun, Optional<String> wwid, String iface,
                              OptionalInt replacementTimeout) {

    public static final String TARGET_PORTAL = "targetPortal";
    public static final String PORTALS = "portals";
    public static final String IQN = "iqn";
    public static final String LUN = "lun";
    public static final String WWID = "wwid";
    public static final String IFACE = "iface";
    public static final String REPLACEMENT_TIMEOUT = "replacementTimeout";

    /** The largest LUN a volume may name: KeyFormats.ISCSI_LUN's (Linux's single-level LUNs, 0..2^32-1). */
    private static final long MAX_LUN = KeyFormats.ISCSI_LUN.maxValue().orElseThrow().longValueExact();

    /** Whether {@code lun} is a LUN a volume may name (a journal's entry is checked by it too). */
    static boolean isLun(long lun) {
        return lun >= 0 && lun <= MAX_LUN;
    }

    public IscsiVolumeSpec {
        portals = List.copyOf(portals);
    }

    public List<IscsiPath> paths() {
        return portals.stream().map(p -> new IscsiPath(iqn, p, iface)).toList();
    }

    /**
     * @throws VolumeException INVALID_ARGUMENT naming every malformed or missing key
     */
    public static IscsiVolumeSpec from(AttachRequest request) throws VolumeException {
        return KeyProblems.parsed(problems -> read(request, problems));
    }

    /** The spec, or empty after recording in {@code problems} every key that is missing or malformed. */
    public static Optional<IscsiVolumeSpec> read(AttachRequest request, KeyProblems problems) throws VolumeException {
        int before = problems.size();
        Set<Portal> portals = new LinkedHashSet<>();
        problems.check(() -> portal(TARGET_PORTAL, required(request, TARGET_PORTAL))).ifPresent(portals::add);
        for (String extra : ContextList.items(request.key(PORTALS).orElse(""))) {
            problems.check(() -> portal(PORTALS, extra)).ifPresent(portals::add);
        }
        Optional<String> iqn = problems.check(() -> iqn(required(request, IQN), problems.reading()));
        Optional<Long> lun = problems.check(() -> lun(required(request, LUN)));
        Optional<String> iface = problems.check(() -> iface(request.key(IFACE).orElse(IscsiPath.DEFAULT_IFACE)));
        Optional<Integer> replacementTimeout = problems.check(() -> replacementTimeout(request));
        Optional<String> wwid = request.key(WWID);
        if (wwid.isPresent()) {
            problems.check(() -> WwidKeys.one(WWID, wwid.get()));
        }
        if (problems.size() > before) {
            return Optional.empty();
        }
        return Optional.of(new IscsiVolumeSpec(new ArrayList<>(portals), iqn.orElseThrow(), lun.orElseThrow(), wwid,
                iface.orElseThrow(), replacementTimeout.map(OptionalInt::of).orElse(OptionalInt.empty())));
    }

    /**
     * The target's name in lower case. A stage takes capitals (and has always lower-cased them); a new volume
     * is asked to write the name as the target has it, in lower case (RFC 3722), so that the PV says what is used.
     */
    private static String iqn(String text, KeyProblems.Reading reading) throws VolumeException {
        String iqn = text.toLowerCase(Locale.ROOT);
        if (!KeyFormats.ISCSI_NAME.accepts(iqn)) {
            throw VolumeException.invalid("volume_context." + IQN + " \"" + shorten(text)
                    + "\" is not an iSCSI name (iqn.YYYY-MM.domain[:id], eui.<16 hex>, naa.<hex>; at most 223 bytes)");
        }
        if (reading == KeyProblems.Reading.NEW_VOLUME && !iqn.equals(text)) {
            throw VolumeException.invalid("volume_context." + IQN + " \"" + shorten(text) + "\" has capitals: write"
                    + " it in lower case (\"" + shorten(iqn) + "\"), as iSCSI names are normalised (RFC 3722) and"
                    + " compared byte by byte");
        }
        return iqn;
    }

    private static long lun(String text) throws VolumeException {
        if (!KeyFormats.ISCSI_LUN.accepts(text)) {
            throw VolumeException.invalid("volume_context." + LUN + " \"" + shorten(text) + "\" is not a LUN ("
                    + KeyFormats.ISCSI_LUN.description() + ")");
        }
        return Long.parseLong(text);
    }

    private static String iface(String iface) throws VolumeException {
        if (!IscsiPath.isIfaceName(iface)) {
            throw VolumeException.invalid("volume_context." + IFACE + " \"" + shorten(iface)
                    + "\" is not an open-iscsi interface name");
        }
        return iface;
    }

    private static Integer replacementTimeout(AttachRequest request) throws VolumeException {
        Optional<String> timeoutText = request.key(REPLACEMENT_TIMEOUT);
        if (timeoutText.isEmpty()) {
            return null;
        }
        try {
            return ReplacementTimeout.parse(timeoutText.get());
        } catch (IllegalArgumentException e) {
            throw VolumeException.invalid("volume_context." + REPLACEMENT_TIMEOUT + " \""
                    + shorten(timeoutText.get()) + "\": " + e.getMessage());
        }
    }

    private static String required(AttachRequest request, String key) throws VolumeException {
        return request.key(key).orElseThrow(() -> VolumeException.invalid(
                "volume_context." + key + " is required by the iscsi transport"));
    }

    private static Portal portal(String key, String text) throws VolumeException {
        if (!KeyFormats.ISCSI_PORTAL.accepts(text)) {
            throw VolumeException.invalid("volume_context." + key + " \"" + shorten(text) + "\" is not a portal ("
                    + KeyFormats.ISCSI_PORTAL.description() + ")");
        }
        try {
            return Portal.parse(text);
        } catch (IllegalArgumentException e) {
            throw VolumeException.invalid("volume_context." + key + ": " + e.getMessage());
        }
    }


    private static String shorten(String text) {
        return text.length() > 80 ? text.substring(0, 80) + "..." : text;
    }
}
