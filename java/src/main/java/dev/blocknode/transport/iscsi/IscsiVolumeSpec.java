package dev.blocknode.transport.iscsi;

import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.ContextList;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
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

    /** SAM allows 64-bit LUNs; Linux addresses 0..2^32-1 with single-level LUNs in practice. */
    private static final long MAX_LUN = 0xFFFF_FFFFL;

    /** Whether {@code lun} is a LUN a volume may name. */
    static boolean isLun(long lun) {
        return lun >= 0 && lun <= MAX_LUN;
    }

    public IscsiVolumeSpec {
        portals = List.copyOf(portals);
    }

    public List<IscsiPath> paths() {
        return portals.stream().map(p -> new IscsiPath(iqn, p, iface)).toList();
    }

    public static IscsiVolumeSpec from(AttachRequest request) throws VolumeException {
        String primary = required(request, TARGET_PORTAL);
        Set<Portal> portals = new LinkedHashSet<>();
        portals.add(portal(TARGET_PORTAL, primary));
        for (String extra : ContextList.items(request.key(PORTALS).orElse(""))) {
            portals.add(portal(PORTALS, extra));
        }
        String iqn = required(request, IQN).toLowerCase(java.util.Locale.ROOT);
        if (!IscsiPath.isTargetName(iqn)) {
            throw VolumeException.invalid("volume_context." + IQN + " \"" + shorten(iqn)
                    + "\" is not an iSCSI name (iqn.YYYY-MM.domain[:id], eui.<16 hex>, naa.<hex>)");
        }
        String lunText = required(request, LUN);
        long lun;
        try {
            lun = Long.parseLong(lunText);
        } catch (NumberFormatException e) {
            throw VolumeException.invalid("volume_context." + LUN + " \"" + shorten(lunText) + "\" is not a number");
        }
        if (!isLun(lun)) {
            throw VolumeException.invalid("volume_context." + LUN + " " + lun + " is out of range 0.." + MAX_LUN);
        }
        String iface = request.key(IFACE).orElse(IscsiPath.DEFAULT_IFACE);
        if (!IscsiPath.isIfaceName(iface)) {
            throw VolumeException.invalid("volume_context." + IFACE + " \"" + shorten(iface)
                    + "\" is not an open-iscsi interface name");
        }
        OptionalInt replacementTimeout = OptionalInt.empty();
        Optional<String> timeoutText = request.key(REPLACEMENT_TIMEOUT);
        if (timeoutText.isPresent()) {
            try {
                replacementTimeout = OptionalInt.of(ReplacementTimeout.parse(timeoutText.get()));
            } catch (IllegalArgumentException e) {
                throw VolumeException.invalid("volume_context." + REPLACEMENT_TIMEOUT + " \""
                        + shorten(timeoutText.get()) + "\": " + e.getMessage());
            }
        }
        return new IscsiVolumeSpec(new ArrayList<>(portals), iqn, lun, request.key(WWID), iface, replacementTimeout);
    }

    private static String required(AttachRequest request, String key) throws VolumeException {
        return request.key(key).orElseThrow(() -> VolumeException.invalid(
                "volume_context." + key + " is required by the iscsi transport"));
    }

    private static Portal portal(String key, String text) throws VolumeException {
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
