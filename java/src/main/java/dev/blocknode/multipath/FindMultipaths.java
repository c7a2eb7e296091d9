package dev.blocknode.multipath;

import java.util.Locale;
import java.util.Optional;

/**
 * multipathd's {@code find_multipaths} policy, read from {@code multipathd show config}: whether the daemon builds
 * a map over every path that is not blacklisted by itself. With "no"/"off" and "greedy" it does, and when it
 * creates a map it records the WWID in the wwids file itself (and has udev re-claim the paths), so a
 * {@code multipath -a WWID} beforehand adds nothing. "strict" (the built-in default), "yes"/"on" and "smart"
 * take a WWID only once it is in the wwids file or seen on two paths: there {@code multipath -a} is what makes
 * the map appear, and anything unread or unknown is treated the same way.
 */
final class FindMultipaths {

    private FindMultipaths() {
    }

    /** True when the config's defaults say multipathd takes every path; false when they do not or say nothing. */
    static boolean takesEveryPath(String showConfig) {
        return valueIn(showConfig).map(v -> switch (v.toLowerCase(Locale.ROOT)) {
            case "no", "off", "greedy" -> true;
            default -> false;
        }).orElse(false);
    }

    /** The value of {@code find_multipaths} in the top-level {@code defaults} section, unquoted. */
    static Optional<String> valueIn(String showConfig) {
        boolean inDefaults = false;
        for (String raw : showConfig.split("\n")) {
            String line = raw.strip();
            if (!inDefaults) {
                inDefaults = line.equals("defaults {");
                continue;
            }
            if (line.equals("}")) {
                return Optional.empty();
            }
            String[] words = line.split("\\s+", 2);
            if (words.length == 2 && words[0].equals("find_multipaths")) {
                String value = words[1].strip();
                if (value.length() >= 2 && value.startsWith("\"") && value.endsWith("\"")) {
                    value = value.substring(1, value.length() - 1);
                }
                return Optional.of(value);
            }
        }
        return Optional.empty();
    }
}
