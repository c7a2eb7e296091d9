package dev.blocknode.scsi;

/**
 * Where a SCSI logical unit sits in the kernel: host (HBA or iSCSI session), channel, target id, LUN. The
 * LUN is the kernel's number, as shown in {@code H:C:T:L} and written to a host's scan file.
 */
public record ScsiAddress(int host, int channel, int target, long lun) {

    public ScsiAddress {
        if (host < 0 || channel < 0 || target < 0 || lun < 0) {
            throw new IllegalArgumentException("a SCSI address has no negative parts: "
                    + host + ":" + channel + ":" + target + ":" + lun);
        }
    }

    /** Parses the kernel's "H:C:T:L" (the name of a directory under /sys/class/scsi_device). */
    public static ScsiAddress parse(String text) {
        String[] parts = text.strip().split(":", -1);
        if (parts.length != 4) {
            throw new IllegalArgumentException("not a SCSI address H:C:T:L: \"" + text + "\"");
        }
        try {
            return new ScsiAddress(Integer.parseInt(parts[0]), Integer.parseInt(parts[1]),
                    Integer.parseInt(parts[2]), Long.parseLong(parts[3]));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a SCSI address H:C:T:L: \"" + text + "\"", e);
        }
    }

    /** The same host, channel and target with another LUN. */
    public ScsiAddress withLun(long otherLun) {
        return new ScsiAddress(host, channel, target, otherLun);
    }

    @Override
    public String toString() {
        return host + ":" + channel + ":" + target + ":" + lun;
    }
}
