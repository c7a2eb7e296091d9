package dev.blocknode.os.uevent;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * One kernel uevent: what happened ({@code add}, {@code change}, {@code remove}...) to which sysfs object
 * ({@code /devices/...}) of which subsystem, with all the KEY=VALUE properties the kernel sent.
 */
public record Uevent(String action, String devpath, String subsystem, Map<String, String> properties) {

    public Uevent {
        properties = Map.copyOf(properties);
    }

    /**
     * Parses a message as the kernel sends it: {@code action@devpath}, a NUL, then {@code KEY=VALUE} strings
     * each ended by a NUL. Empty when it is not one: no header, or ACTION, DEVPATH or SUBSYSTEM missing or
     * disagreeing with the header. Never throws on bad input: the bytes come from outside the process.
     */
    public static Optional<Uevent> parse(byte[] message) {
        String[] fields = new String(message, StandardCharsets.UTF_8).split("\0");
        if (fields.length < 2) {
            return Optional.empty();
        }
        int at = fields[0].indexOf('@');
        if (at <= 0 || at == fields[0].length() - 1) {
            return Optional.empty();
        }
        Map<String, String> properties = new LinkedHashMap<>();
        for (int i = 1; i < fields.length; i++) {
            int eq = fields[i].indexOf('=');
            if (eq > 0) {
                properties.putIfAbsent(fields[i].substring(0, eq), fields[i].substring(eq + 1));
            }
        }
        String action = properties.get("ACTION");
        String devpath = properties.get("DEVPATH");
        String subsystem = properties.get("SUBSYSTEM");
        if (action == null || devpath == null || subsystem == null
                || !fields[0].equals(action + "@" + devpath)) {
            return Optional.empty();
        }
        return Optional.of(new Uevent(action, devpath, subsystem, properties));
    }

    /** The kernel's name of the device node, e.g. {@code sdb} or {@code dm-3}, when the event has one. */
    public Optional<String> deviceName() {
        return Optional.ofNullable(properties.get("DEVNAME"));
    }

    @Override
    public String toString() {
        return action + "@" + devpath + " (" + subsystem + ")";
    }
}
