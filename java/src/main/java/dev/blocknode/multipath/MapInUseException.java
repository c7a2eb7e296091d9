package dev.blocknode.multipath;

import java.io.IOException;
import java.util.List;

/**
 * The map could not be removed until the deadline (DM_DEV_REMOVE kept answering EBUSY, or {@code multipath -f}
 * kept failing); the message names what holds the map.
 */
public final class MapInUseException extends IOException {

    private final transient MultipathMap map;
    private final List<String> users;

    /** {@code lastDiagnostic}: what the last attempt was told, as "multipath -f said: ...". */
    public MapInUseException(MultipathMap map, List<String> users, String lastDiagnostic) {
        super("multipath map " + map + " could not be flushed: "
                + (users.isEmpty() ? "no holder or mount found (a process may hold it open)"
                : "in use by " + String.join(", ", users))
                + (lastDiagnostic == null || lastDiagnostic.isBlank() ? "" : "; " + lastDiagnostic));
        this.map = map;
        this.users = List.copyOf(users);
    }

    public MultipathMap map() {
        return map;
    }

    /** Holders ("dm-7 (vg0-data)") and mounts ("mounted at /x") found when giving up. */
    public List<String> users() {
        return users;
    }
}
