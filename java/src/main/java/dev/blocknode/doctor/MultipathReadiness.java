package dev.blocknode.doctor;

import dev.blocknode.multipath.MultipathConfig;
import dev.blocknode.multipath.MultipathConfig.Section;
import dev.blocknode.os.AbstractSockets;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * dm-multipath: multipathd running (the plugin builds maps without it, but then nothing checks or reinstates a
 * failed path), and the settings of its effective configuration ({@code multipathd show config}; the file when
 * the daemon is down) that decide whether a LUN gets a map and what I/O does when its last path goes. Not set up
 * when there is no daemon, no configuration (the chart creates an empty file where the host has none) and no
 * wwids file.
 */
final class MultipathReadiness {

    static final Duration SHOW_CONFIG_TIMEOUT = Duration.ofSeconds(10);
    /** Kernel names of SCSI disks: a devnode blacklist matching them all hides every iSCSI and FC path. */
    private static final List<String> SCSI_DISKS = List.of("sda", "sdb", "sdq", "sdaz");
    /** WWIDs of several arrays' LUNs (multipath's form): a wwid blacklist matching them all hides every LUN. */
    private static final List<String> WWIDS = List.of("3600a098038303053453f463045727a4d",
            "36001405f3d2a1b0c4e5f60718293a4b5", "360002ac0000000000000000b00019b5d", "2002538b571b35e61");
    private static final List<List<String>> ARRAYS = List.of(List.of("NETAPP", "LUN C-Mode"),
            List.of("LIO-ORG", "TCMU device"), List.of("3PARdata", "VV"), List.of("PURE", "FlashArray"));
    /**
     * What a repair takes once the repair loop gets to it (a login, a targeted scan, multipathd adding the path back:
     * seconds; this is for a loaded node): the queueing must outlast two repair intervals and this, or with every
     * session gone the writes fail before the repair brings the paths back.
     */
    static final Duration REPAIR_MARGIN = Duration.ofSeconds(30);
    /** multipathd's default polling_interval: a no_path_retry number counts these. */
    static final int DEFAULT_POLLING_SECONDS = 5;
    /** The settings that make a map queue I/O while it has no path. */
    private static final Set<String> WITHOUT_A_NUMBER = Set.of("queue");

    private final HostPaths paths;
    private final CommandRunner commands;
    private final Duration repairInterval;

    /** @param repairInterval the plugin's --repair-interval, {@link Duration#ZERO} when its repair loop is off */
    MultipathReadiness(HostPaths paths, CommandRunner commands, Duration repairInterval) {
        this.paths = paths;
        this.commands = commands;
        this.repairInterval = repairInterval;
    }

    TransportReadiness check(AbstractSockets sockets) throws IOException {
        boolean daemon = sockets.has(AbstractSockets.MULTIPATHD);
        Optional<String> file = HostFiles.read(paths.multipathConf()).filter(text -> !text.isBlank());
        boolean wwids = Files.exists(paths.multipathWwids());
        if (!daemon && file.isEmpty() && !wwids) {
            return TransportReadiness.notSetUp(TransportReadiness.MULTIPATH, "no multipathd listening, no "
                    + paths.multipathConf() + " (or an empty one) and no " + paths.multipathWwids());
        }
        List<Finding> findings = new ArrayList<>();
        Section effective;
        String source;
        Optional<String> shown = daemon ? showConfig() : Optional.empty();
        if (daemon) {
            findings.add(Finding.ok("multipathd", "multipathd listens on " + AbstractSockets.MULTIPATHD));
        } else {
            findings.add(Finding.warning("multipathd", "multipathd is not running on the host: the plugin builds"
                    + " maps with multipath alone, but no one checks paths or brings a failed one back",
                    "on the host: systemctl enable --now multipathd"));
        }
        if (shown.isPresent()) {
            effective = MultipathConfig.parse(shown.get());
            source = "multipathd show config";
        } else {
            if (daemon) {
                findings.add(Finding.warning("show-config", "multipathd show config did not answer: the settings"
                        + " below are the file's, not the daemon's", "check multipathd's log on the host"));
            }
            effective = MultipathConfig.parse(file.orElse(""));
            source = paths.multipathConf().toString();
        }
        Section own = MultipathConfig.parse(file.orElse(""));
        findings.add(findMultipaths(effective, source));
        findings.add(blacklist(effective, source));
        findings.add(userFriendlyNames(effective, source));
        findings.add(noPathRetry(effective, own, source));
        return TransportReadiness.of(TransportReadiness.MULTIPATH, findings);
    }

    private Optional<String> showConfig() {
        try {
            CommandResult result = commands.run(Command.of("multipathd", "show", "config")
                    .withTimeout(SHOW_CONFIG_TIMEOUT));
            // Older releases answer "fail" with exit 0.
            return result.succeeded() && !result.stdout().isBlank() && !result.stdout().strip().equals("fail")
                    ? Optional.of(result.stdout()) : Optional.empty();
        } catch (CommandException notRunnable) {
            return Optional.empty();
        }
    }

    private static Optional<String> defaults(Section config, String key) {
        Optional<String> value = Optional.empty();
        for (Section defaults : config.sections("defaults")) {
            Optional<String> here = defaults.value(key);
            if (here.isPresent()) {
                value = here; // a later defaults section wins, as in multipath
            }
        }
        return value;
    }

    private Finding findMultipaths(Section config, String source) {
        Optional<String> value = defaults(config, "find_multipaths");
        String shown = value.map(v -> "find_multipaths " + v).orElse("find_multipaths not set in " + source
                + " (the build's default applies: strict upstream)");
        if (value.isPresent() && Set.of("no", "off", "greedy").contains(value.get())) {
            return Finding.ok("find-multipaths", shown + ": a map for every disk with a WWID; "
                    + paths.multipathWwids() + " is not consulted");
        }
        Path directory = paths.multipathWwids().getParent();
        if (!Files.isDirectory(directory) || !Files.isWritable(directory)
                || Files.exists(paths.multipathWwids()) && !Files.isWritable(paths.multipathWwids())) {
            return Finding.error("find-multipaths", shown + ": multipathd builds a map only of a WWID in "
                    + paths.multipathWwids() + ", which cannot be written here, so the plugin cannot add a LUN's"
                    + " (multipath -a) and its map never appears", "mount the host's /etc/multipath read-write"
                    + " into the container (the chart's multipath-etc volume), or set find_multipaths no");
        }
        return Finding.ok("find-multipaths", shown + ": multipathd builds a map only of a WWID in "
                + paths.multipathWwids() + "; the plugin adds each LUN's there (multipath -a) before it asks for"
                + " the map");
    }

    private static Finding blacklist(Section config, String source) {
        Optional<String> hiding = Optional.empty();
        for (Section blacklist : config.sections("blacklist")) {
            for (MultipathConfig.Entry entry : blacklist.entries()) {
                if (entry.key().equals("devnode") && matchesAll(entry.value(), SCSI_DISKS)
                        || entry.key().equals("wwid") && matchesAll(entry.value(), WWIDS)) {
                    hiding = hiding.or(() -> Optional.of(entry.key() + " \"" + entry.value() + "\""));
                }
            }
            for (Section device : blacklist.sections("device")) {
                String vendor = device.value("vendor").orElse(".*");
                String product = device.value("product").orElse(".*");
                if (ARRAYS.stream().allMatch(array -> matches(vendor, array.get(0))
                        && matches(product, array.get(1)))) {
                    hiding = hiding.or(() -> Optional.of("device { vendor \"" + vendor + "\" product \"" + product
                            + "\" }"));
                }
            }
        }
        if (hiding.isEmpty()) {
            return Finding.ok("blacklist", "the blacklist of " + source + " leaves SCSI disks to multipath");
        }
        boolean excepted = config.sections("blacklist_exceptions").stream().anyMatch(e -> e.entries().stream()
                .anyMatch(entry -> !entry.key().equals("property")) || !e.sections("device").isEmpty());
        if (excepted) {
            return Finding.warning("blacklist", "the blacklist of " + source + " hides every SCSI disk (" + hiding.get()
                    + ") but those in blacklist_exceptions: a LUN not listed there gets no map",
                    "list your arrays' LUNs in blacklist_exceptions of /etc/multipath.conf (a device section with"
                    + " their vendor and product)");
        }
        return Finding.error("blacklist", "the blacklist of " + source + " hides every SCSI disk (" + hiding.get()
                + "): no iSCSI or FC LUN gets a multipath map", "narrow that blacklist entry in /etc/multipath.conf,"
                + " or add the arrays' LUNs to blacklist_exceptions");
    }

    private static Finding userFriendlyNames(Section config, String source) {
        String value = defaults(config, "user_friendly_names").orElse("not set in " + source + " (no)");
        return Finding.ok("user-friendly-names", "user_friendly_names " + value + ": either works; the plugin finds"
                + " a LUN's map by its WWID in sysfs (dm/uuid), never by its name");
    }

    private Finding noPathRetry(Section effective, Section own, String source) {
        List<String> queueing = new ArrayList<>();
        for (Section section : effective.sections("defaults")) {
            if (queues(section)) {
                queueing.add("defaults");
            }
        }
        for (Section section : effective.sections("overrides")) {
            if (queues(section)) {
                queueing.add("overrides");
            }
        }
        // Device sections from the file alone: the daemon's list holds the built-in table of every array it
        // knows, some of which queue, and only the user's own entries say what this node's arrays do.
        for (Section devices : own.sections("devices")) {
            for (Section device : devices.sections("device")) {
                if (queues(device)) {
                    queueing.add("the device section of " + device.value("vendor").orElse("?") + " "
                            + device.value("product").orElse("?") + " in " + paths.multipathConf());
                }
            }
        }
        int polling = defaults(effective, "polling_interval").flatMap(MultipathReadiness::positive)
                .orElse(DEFAULT_POLLING_SECONDS);
        if (queueing.isEmpty()) {
            List<String> shorter = shorterThanARepair(effective, own, polling);
            if (!shorter.isEmpty()) {
                return Finding.warning("no-path-retry", "with every path gone, I/O queues for " + String.join(", ",
                        shorter) + " x polling_interval " + polling + " s: less than two repair intervals (2 x "
                        + repairInterval.toSeconds() + " s) and a repair (" + REPAIR_MARGIN.toSeconds() + " s), so"
                        + " when every session is gone the writes fail before the repair loop brings the paths back",
                        "set no_path_retry to at least " + retriesForARepair(polling) + " there (" + polling + " s"
                        + " each), or leave it if this node's applications should see those writes fail sooner");
            }
            return Finding.ok("no-path-retry", "no_path_retry " + defaults(effective, "no_path_retry")
                    .orElse("not set in " + source) + ": I/O fails once every path is gone and the retries are"
                    + " spent" + (repairInterval.isZero() ? "" : ", after the repair loop had two intervals to"
                    + " bring a path back"));
        }
        return Finding.warning("no-path-retry", "I/O queues for ever when every path is gone (no_path_retry queue,"
                + " or queue_if_no_path, in " + String.join(", ", queueing) + "): a pod's writes, its unmount and"
                + " an unstage hang until a path is back (the plugin turns queueing off only for a map it is"
                + " flushing)", "set no_path_retry to a number of checker intervals there, at least "
                + retriesForARepair(polling) + " (" + polling + " s each: two repair intervals and a repair)");
    }

    /**
     * The number settings of no_path_retry ({@code defaults}, {@code overrides}, the file's own device sections)
     * whose queueing ends before two repair intervals and a repair; none when the repair loop is off.
     */
    private List<String> shorterThanARepair(Section effective, Section own, int polling) {
        List<String> shorter = new ArrayList<>();
        if (repairInterval.isZero()) {
            return shorter;
        }
        for (String kind : List.of("defaults", "overrides")) {
            for (Section section : effective.sections(kind)) {
                tooShort(section, polling).ifPresent(n -> shorter.add("no_path_retry " + n + " (" + kind + ")"));
            }
        }
        for (Section devices : own.sections("devices")) {
            for (Section device : devices.sections("device")) {
                tooShort(device, polling).ifPresent(n -> shorter.add("no_path_retry " + n + " (the device section of "
                        + device.value("vendor").orElse("?") + " " + device.value("product").orElse("?") + ")"));
            }
        }
        return shorter;
    }

    private Optional<Integer> tooShort(Section section, int polling) {
        return section.value("no_path_retry").flatMap(MultipathReadiness::positive)
                .filter(n -> n < retriesForARepair(polling));
    }

    /** The checker intervals that outlast two repair intervals and a repair. */
    private long retriesForARepair(int polling) {
        long needed = repairInterval.multipliedBy(2).plus(REPAIR_MARGIN).toSeconds();
        return (needed + polling - 1) / polling;
    }

    private static Optional<Integer> positive(String value) {
        try {
            int n = Integer.parseInt(value.strip());
            return n > 0 ? Optional.of(n) : Optional.empty();
        } catch (NumberFormatException notANumber) {
            return Optional.empty();
        }
    }

    /** no_path_retry queue, or the queue_if_no_path feature with no no_path_retry to end it. */
    private static boolean queues(Section section) {
        Optional<String> retry = section.value("no_path_retry");
        if (retry.isPresent()) {
            return WITHOUT_A_NUMBER.contains(retry.get());
        }
        return section.value("features").filter(f -> f.contains("queue_if_no_path")).isPresent();
    }

    /** multipath's regex (POSIX extended; a leading "!" negates it) against every name. */
    private static boolean matchesAll(String regex, List<String> names) {
        return names.stream().allMatch(name -> matches(regex, name));
    }

    private static boolean matches(String regex, String name) {
        boolean negated = regex.startsWith("!");
        String pattern = negated ? regex.substring(1) : regex;
        Predicate<String> found;
        try {
            found = Pattern.compile(pattern).asPredicate();
        } catch (PatternSyntaxException unreadable) {
            return false; // multipath would reject it too; not ours to judge here
        }
        return found.test(name) != negated;
    }
}
