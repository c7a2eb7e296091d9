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
        return !one.isBlank() && !other.isBlank() && !same(one, other);
    }

    /** Whether two identities name one device: as WWIDs where both parse, else as normalized text. */
    public static boolean same(String one, String other) {
        try {
            return Wwid.parse(one).matches(Wwid.parse(other));
        } catch (IllegalArgumentException notAWwid) {
            return normalized(one).equals(normalized(other));
        }
    }

    /** Case and runs of white space do not tell identities apart (sysfs pads t10 ids with spaces). */
    public static String normalized(String identity) {
        return identity.strip().replaceAll("\\s+", " ").toLowerCase(Locale.ROOT);
    }
}
