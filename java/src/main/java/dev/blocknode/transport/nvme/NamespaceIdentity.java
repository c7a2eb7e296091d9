package dev.blocknode.transport.nvme;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.regex.Pattern;

/**
 * Which namespace a volume is: its NGUID (16 bytes), EUI-64 (8 bytes) and/or UUID, as the array reports them
 * in the namespace identification descriptors, and optionally its NSID. Every identifier given must match;
 * at least one of the three is required, since an NSID alone is only a slot number. Identifiers are compared
 * as hex digits, so "0b5e1f8a-3c2d-..." (sysfs' nguid and uuid), "eui.0b5e1f8a3c2d..." (sysfs' wwid) and
 * "01 02 03 ..." (sysfs' eui) are all accepted spellings.
 */
record NamespaceIdentity(Optional<String> nguid, Optional<String> eui64, Optional<String> uuid, OptionalLong nsid) {

    private static final Pattern SEPARATORS = Pattern.compile("[-: ]");
    private static final Pattern HEX = Pattern.compile("[0-9a-f]+");

    /** Lowercase hex digits of an identifier of {@code bytes} bytes; empty when the text is not one. */
    static Optional<String> hexDigits(String text, int bytes, String prefix) {
        String value = text.strip().toLowerCase(Locale.ROOT);
        if (value.startsWith(prefix)) {
            value = value.substring(prefix.length());
        }
        value = SEPARATORS.matcher(value).replaceAll("");
        if (value.length() != bytes * 2 || !HEX.matcher(value).matches() || value.chars().allMatch(c -> c == '0')) {
            return Optional.empty(); // all zeroes is the NVMe spec's "not reported"
        }
        return Optional.of(value);
    }

    static Optional<String> nguidOf(String text) {
        return hexDigits(text, 16, "eui.");
    }

    static Optional<String> eui64Of(String text) {
        return hexDigits(text, 8, "eui.");
    }

    static Optional<String> uuidOf(String text) {
        return hexDigits(text, 16, "uuid.");
    }

    /** Why {@code found} is not this namespace (empty when it is): which identifier differs, with both values. */
    Optional<String> mismatch(Reported found) {
        List<String> differences = new ArrayList<>();
        compare("NGUID", nguid, found.nguid(), differences);
        compare("EUI-64", eui64, found.eui64(), differences);
        compare("UUID", uuid, found.uuid(), differences);
        if (nsid.isPresent() && (found.nsid().isEmpty() || found.nsid().getAsLong() != nsid.getAsLong())) {
            differences.add("NSID " + (found.nsid().isPresent() ? found.nsid().getAsLong() : "unknown")
                    + " instead of " + nsid.getAsLong());
        }
        return differences.isEmpty() ? Optional.empty() : Optional.of(String.join(", ", differences));
    }

    private static void compare(String name, Optional<String> expected, Optional<String> found,
                                List<String> differences) {
        if (expected.isPresent() && !expected.equals(found)) {
            differences.add(name + " " + found.orElse("not reported") + " instead of " + expected.get());
        }
    }

    /** What a namespace reports in sysfs, each identifier as hex digits. */
    record Reported(Optional<String> nguid, Optional<String> eui64, Optional<String> uuid, OptionalLong nsid) {
    }

    @Override
    public String toString() {
        List<String> parts = new ArrayList<>();
        nguid.ifPresent(v -> parts.add("NGUID " + v));
        eui64.ifPresent(v -> parts.add("EUI-64 " + v));
        uuid.ifPresent(v -> parts.add("UUID " + v));
        if (nsid.isPresent()) {
            parts.add("NSID " + nsid.getAsLong());
        }
        return String.join(", ", parts);
    }
}
