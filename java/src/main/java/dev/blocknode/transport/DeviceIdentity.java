package dev.blocknode.transport;

import dev.blocknode.scsi.Wwid;

import java.util.Locale;

/**
 * Whether two verified identities ({@link Attachment#identity}, as staging records keep it) name different
 * devices. Only a proof counts: an empty identity (a transport that has none, a loop device) proves nothing,
 * and WWIDs are compared as WWIDs, so that the sysfs form ({@code naa.600...}) and the multipath form
 * ({@code 3600...}) of one LUN are the same device.
 */
public final class DeviceIdentity {

    private DeviceIdentity() {
    }

    /** True only when both identities are known and they name different devices. */
    public static boolean provablyDifferent(String one, String other) {
        if (one.isBlank() || other.isBlank()) {
            return false;
        }
        try {
            return !Wwid.parse(one).matches(Wwid.parse(other));
        } catch (IllegalArgumentException notAWwid) {
            return !normalized(one).equals(normalized(other));
        }
    }

    private static String normalized(String identity) {
        return identity.strip().replaceAll("\\s+", " ").toLowerCase(Locale.ROOT);
    }
}
