package dev.blocknode.os;

/** A Linux dev_t split into major and minor: how the kernel names a block device independent of /dev. */
public record DeviceNumber(long major, long minor) {

    public static DeviceNumber parse(String text) {
        int colon = text.indexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("not a major:minor device number: " + text);
        }
        return new DeviceNumber(Long.parseLong(text.substring(0, colon).strip()),
                Long.parseLong(text.substring(colon + 1).strip()));
    }

    @Override
    public String toString() {
        return major + ":" + minor;
    }
}
