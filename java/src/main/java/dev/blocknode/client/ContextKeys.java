package dev.blocknode.client;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The volume_context keys each transport reads (docs/reference/volume-context.md; a test keeps the two equal).
 * The plugin ignores a key it does not know, so a misspelled optional key ("wwdi") would vanish silently from a
 * PV that stages; {@code blocknode pv} refuses it instead, as the deploy validator does.
 */
final class ContextKeys {

    static final String TRANSPORT = "transport";
    /** The filesystem keys every transport's volumes take (the volume layer reads them, not the transport). */
    private static final String MKFS_OPTIONS = "mkfsOptions";
    private static final String FSCK = "fsck";
    /** LUKS2 on the node; its passphrase is the PV's node-stage secret, never a column. */
    private static final String ENCRYPTION = "encryption";

    static final Map<String, List<String>> BY_TRANSPORT = Map.of(
            "local", List.of(TRANSPORT, "devicePath", "wwid", "fencing", MKFS_OPTIONS, FSCK, ENCRYPTION),
            "iscsi", List.of(TRANSPORT, "targetPortal", "portals", "iqn", "lun", "wwid", "iface",
                    "replacementTimeout", "fencing", MKFS_OPTIONS, FSCK, ENCRYPTION),
            "fc", List.of(TRANSPORT, "targetWWNs", "lun", "wwids", "wwid", "fencing", MKFS_OPTIONS, FSCK, ENCRYPTION),
            "nvme-tcp", List.of(TRANSPORT, "subsysNQN", "nvmePortals", "namespaceNGUID", "namespaceEUI64",
                    "namespaceUUID", "namespaceID", "hostNQN", "hostID", "fencing", MKFS_OPTIONS, FSCK, ENCRYPTION));

    private ContextKeys() {
    }

    /** A problem for each key that no transport reads. */
    static List<String> unknown(Set<String> keys) {
        Set<String> all = new TreeSet<>();
        BY_TRANSPORT.values().forEach(all::addAll);
        return keys.stream().filter(key -> !all.contains(key)).map(key -> "column \"" + key + "\" is neither a PV"
                + " column " + StaticVolume.PV_COLUMNS + " nor a volume_context key " + all).toList();
    }

    /** A problem for each key, known to some transport, that {@code transport} does not read (it would ignore it). */
    static List<String> unknown(String transport, Set<String> keys) {
        Set<String> all = new TreeSet<>();
        BY_TRANSPORT.values().forEach(all::addAll);
        List<String> known = BY_TRANSPORT.getOrDefault(transport, List.of());
        return keys.stream().filter(key -> all.contains(key) && !known.contains(key)).map(key -> "column \"" + key
                + "\" is neither a PV column " + StaticVolume.PV_COLUMNS + " nor a volume_context key of the "
                + transport + " transport " + new TreeSet<>(known)).toList();
    }
}
