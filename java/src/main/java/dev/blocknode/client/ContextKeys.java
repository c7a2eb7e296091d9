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

    /** Refuses a key that no transport reads. */
    static void requireKnown(Set<String> keys) {
        Set<String> all = new TreeSet<>();
        BY_TRANSPORT.values().forEach(all::addAll);
        for (String key : keys) {
            if (!all.contains(key)) {
                throw new IllegalArgumentException("column \"" + key + "\" is neither a PV column "
                        + StaticVolume.PV_COLUMNS + " nor a volume_context key " + all);
            }
        }
    }

    /** Refuses a key that {@code transport} does not read (the plugin would ignore it). */
    static void requireKnown(String transport, Set<String> keys) {
        List<String> known = BY_TRANSPORT.getOrDefault(transport, List.of());
        for (String key : keys) {
            if (!known.contains(key)) {
                throw new IllegalArgumentException("column \"" + key + "\" is neither a PV column "
                        + StaticVolume.PV_COLUMNS + " nor a volume_context key of the " + transport + " transport "
                        + new TreeSet<>(known));
            }
        }
    }
}
