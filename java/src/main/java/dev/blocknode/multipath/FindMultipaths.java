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

    /** The value of {@code find_multipaths} in the defaults (a later defaults section wins, as in multipath). */
    static Optional<String> valueIn(String showConfig) {
        Optional<String> value = Optional.empty();
        for (MultipathConfig.Section defaults : MultipathConfig.parse(showConfig).sections("defaults")) {
            Optional<String> here = defaults.value("find_multipaths");
            if (here.isPresent()) {
                value = here;
            }
        }
        return value;
    }
}
