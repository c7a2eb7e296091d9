package dev.blocknode.client;

import dev.blocknode.Plugin;
import dev.blocknode.config.PluginConfig;
import dev.blocknode.logging.Printable;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.block.BlockDevices;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.fd.ConfinedDirectory;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.mount.LinuxMounter;
import dev.blocknode.os.mount.MountEntry;
import dev.blocknode.os.mount.MountTable;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.state.BootId;
import dev.blocknode.state.KeptLeftovers;
import dev.blocknode.state.RecordStore;
import dev.blocknode.transport.StagedVolumes;
import dev.blocknode.transport.Transports;
import dev.blocknode.transport.san.FenceSettings;
import dev.blocknode.volume.read.HealthProblem;
import dev.blocknode.volume.read.NextSteps;
import dev.blocknode.volume.read.NodeStatusReader;
import dev.blocknode.volume.read.NodeStatusReader.NodeStatus;
import dev.blocknode.volume.read.NodeStatusReader.Publication;
import dev.blocknode.volume.read.NodeStatusReader.UnreadableRecord;
import dev.blocknode.volume.read.NodeStatusReader.UnrecordedMount;
import dev.blocknode.volume.read.NodeStatusReader.Volume;
import dev.blocknode.volume.read.StatusProblem;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * {@code blocknode status}: every volume this node holds, from the state directory's records, the mount table
 * and sysfs, with the problems found, each with its next step; read-only, and working while the plugin is down. The
 * JSON form ({@link StatusJson}) and the exit codes are a documented interface (docs/reference/status.md): change
 * them only by adding.
 */
public final class StatusCommand {

    /** Exit codes (docs/reference/status.md). */
    public static final int HEALTHY = 0;
    public static final int PROBLEMS = 1;
    public static final int CANNOT_RUN = 2;
    public static final int UNKNOWN_VOLUME = 3;

    /** The version of the JSON form: bumped only when a field changes meaning or goes away. */
    public static final int SCHEMA_VERSION = 1;

    public static final String USAGE = """
            usage: java -jar blocknode.jar status [--state-dir DIR] [--kubelet-root DIR] [--driver-name NAME]
                                                  [--volume ID] [-o text|json]

            Every volume this node holds, from the plugin's records, the mount table and sysfs, problems first.
            Read-only; works while the plugin is down. Exit code: 0 all healthy, 1 a volume has a problem or a
            record cannot be read, 2 the command could not run, 3 --volume names a volume this node has no record of.

              --state-dir DIR      the plugin's --state-dir (default /var/lib/blocknode)
              --kubelet-root DIR   the plugin's --kubelet-root (default /var/lib/kubelet)
              --driver-name NAME   the plugin's --driver-name (default block.csi.blocknode.dev)
              --volume ID          only this volume
              -o, --output FORMAT  text (default) or json
            """;

    private StatusCommand() {
    }

    public static int run(List<String> args, PrintStream out, PrintStream err) {
        return run(args, out, err, HostPaths.real());
    }

    /** With the host's /sys and /proc at {@code host} (tests fabricate them). */
    public static int run(List<String> args, PrintStream out, PrintStream err, HostPaths host) {
        SubcommandFlags flags;
        boolean json;
        try {
            flags = SubcommandFlags.parse("status", args,
                    Set.of("--state-dir", "--kubelet-root", "--driver-name", "--volume", "-o", "--output"));
            json = flags.json("status");
        } catch (SubcommandFlags.UsageException e) {
            err.println(Printable.escape(e.getMessage()));
            return CANNOT_RUN;
        }
        if (flags.help()) {
            out.print(USAGE);
            return HEALTHY;
        }
        Path stateDir = Path.of(flags.get("--state-dir").orElse("/var/lib/blocknode"));
        NodeStatusReader.KubeletLayout kubelet = new NodeStatusReader.KubeletLayout(
                Path.of(flags.get("--kubelet-root").orElse("/var/lib/kubelet")),
                flags.get("--driver-name").orElse(PluginConfig.DEFAULT_DRIVER_NAME));
        Optional<String> volume = flags.get("--volume");
        NodeStatus status;
        try {
            RecordStore.Snapshot snapshot = RecordStore.snapshot(stateDir, BootId.read(host));
            List<MountEntry> mounts = MountTable.read(host.mountInfo());
            status = NodeStatusReader.read(snapshot, mounts, host, kubelet, readOnlyTransports(host));
        } catch (IOException | RuntimeException e) {
            // The message may quote --state-dir, a file's name or its content (a sweep report's): escaped, one line.
            err.println("blocknode status: cannot read the node's volumes: " + Printable.escape(String.valueOf(
                    e.getMessage())));
            return CANNOT_RUN;
        } catch (LinkageError e) { // records are read as the plugin reads them, through its native library
            err.println("blocknode status: cannot read the node's volumes: the native library cannot be loaded: "
                    + Printable.escape(e.toString()));
            return CANNOT_RUN;
        }
        if (volume.isPresent()) {
            String id = volume.get();
            List<Volume> one = status.volumes().stream().filter(v -> v.volumeId().equals(id)).toList();
            if (one.isEmpty()) {
                // An unreadable record may be this volume's: its file name cannot be told from here without
                // hashing, and it is listed, so the caller sees it.
                status = status.only(List.of());
                if (json) {
                    out.print(StatusJson.of(status));
                }
                err.println("blocknode status: this node has no record of volume " + Printable.escape(id)
                        + (status.unreadableRecords().isEmpty() ? "" : " (but " + status.unreadableRecords().size()
                        + " record file(s) cannot be read; see status without --volume)"));
                return UNKNOWN_VOLUME;
            }
            status = status.only(one);
        }
        out.print(json ? StatusJson.of(status) : text(status));
        return status.healthy() ? HEALTHY : PROBLEMS;
    }

    /**
     * The plugin's own transports, to read each volume's paths exactly as NodeGetVolumeHealth does, over a host
     * that refuses to run any command: reading paths needs only sysfs, and status must change nothing even if a
     * transport's health read ever grew a command.
     */
    static Transports readOnlyTransports(HostPaths paths) {
        CommandRunner refusing = command -> {
            throw new CommandException(command, null, "blocknode status runs no command", null);
        };
        Host host = new Host(paths, refusing, new LinuxMounter(paths), new BlockDevices(paths), ConfinedDirectory.REAL);
        return Plugin.transports(host, DeviceWaiter.polling(DeviceWaiter.DEFAULT_INTERVAL), FenceSettings.DEFAULTS,
                StagedVolumes.NONE);
    }

    /** For a person: the problems first, then one aligned row per volume, then its publications. */
    public static String text(NodeStatus status) {
        StringBuilder out = new StringBuilder();
        List<String[]> problems = new ArrayList<>();
        List<String> nextSteps = new ArrayList<>();
        for (Volume v : status.volumes()) {
            for (StatusProblem p : v.problems()) {
                problems.add(new String[]{v.volumeId(), p.reason(), p.message()});
                nextSteps.add(p.next());
            }
        }
        for (UnreadableRecord r : status.unreadableRecords()) {
            problems.add(new String[]{"-", HealthProblem.Kind.RECORD_UNREADABLE.reason(), r.reason()});
            nextSteps.add(r.next());
        }
        for (UnrecordedMount m : status.unrecordedMounts()) {
            problems.add(new String[]{m.volumeId().orElse("-"), UNRECORDED_MOUNT, describe(m)});
            nextSteps.add(m.next());
        }
        List<String> kept = status.sweepKept().map(KeptLeftovers.Report::kept).orElse(List.of());
        for (String thing : kept) {
            problems.add(new String[]{"-", LEFTOVERS_KEPT, thing});
            nextSteps.add(NextSteps.LEFTOVERS_KEPT);
        }
        if (problems.isEmpty()) {
            out.append("no problems: ").append(status.volumes().size()).append(" volume(s), all healthy\n");
        } else {
            out.append("PROBLEMS\n");
            table(out, new String[]{"VOLUME", "PROBLEM", "DETAIL"}, problems, nextSteps);
        }
        if (!status.volumes().isEmpty()) {
            out.append("\nVOLUMES\n");
            List<String[]> rows = new ArrayList<>();
            for (Volume v : status.volumes()) {
                rows.add(new String[]{v.volumeId(), v.phase(), v.transport(), v.accessType(),
                        v.device().map(d -> d.path() + " (" + d.number() + ")").orElse("-"),
                        v.device().map(d -> d.present() ? "yes" : "GONE").orElse("-"),
                        v.stagingPath().isEmpty() ? "-" : v.stagingPath(),
                        v.stagingMounted().map(m -> m ? "yes" : "NO").orElse("-"),
                        v.paths().map(p -> p.serving() + "/" + p.total()).orElse("-"),
                        v.fenceKey().isPresent() ? String.format("0x%016x", v.fenceKey().getAsLong()) : "-",
                        v.problems().isEmpty() ? "ok" : String.valueOf(v.problems().size())});
            }
            table(out, new String[]{"VOLUME", "PHASE", "TRANSPORT", "ACCESS", "DEVICE", "PRESENT", "STAGING PATH",
                    "MOUNTED", "PATHS", "FENCE KEY", "PROBLEMS"}, rows);
            List<String[]> publications = new ArrayList<>();
            for (Volume v : status.volumes()) {
                for (Publication p : v.publications()) {
                    publications.add(new String[]{v.volumeId(), p.podUid().orElse("-"), p.readOnly() ? "ro" : "rw",
                            p.mounted() ? "yes" : "NO", p.target()});
                }
            }
            if (!publications.isEmpty()) {
                out.append("\nPUBLICATIONS\n");
                table(out, new String[]{"VOLUME", "POD UID", "MODE", "MOUNTED", "TARGET"}, publications);
            }
            List<String[]> identities = new ArrayList<>();
            for (Volume v : status.volumes()) {
                v.device().filter(d -> !d.identity().isEmpty())
                        .ifPresent(d -> identities.add(new String[]{v.volumeId(), d.identity()}));
            }
            if (!identities.isEmpty()) {
                out.append("\nDEVICE IDENTITIES\n");
                table(out, new String[]{"VOLUME", "IDENTITY"}, identities);
            }
        }
        if (!kept.isEmpty()) {
            out.append("\nLEFT BY THE REPAIR LOOP'S SWEEP (no record names them; as of ")
                    .append(status.sweepKept().orElseThrow().at()).append(")\n");
            List<String[]> rows = new ArrayList<>();
            for (String thing : kept) {
                rows.add(new String[]{thing});
            }
            table(out, new String[]{"WHAT, WHERE AND WHY"}, rows);
        }
        if (!status.unreadableRecords().isEmpty()) {
            out.append("\nUNREADABLE RECORDS\n");
            List<String[]> rows = new ArrayList<>();
            for (UnreadableRecord r : status.unreadableRecords()) {
                rows.add(new String[]{r.file(), r.reason()});
            }
            table(out, new String[]{"FILE", "REASON"}, rows);
        }
        return out.toString();
    }

    /** The reason an unrecorded mount is listed under, beside the health reasons of a volume's problems. */
    static final String UNRECORDED_MOUNT = "UnrecordedMount";
    /** The reason of a leftover the sweep kept: NodeGetStorageHealth's condition for them. */
    static final String LEFTOVERS_KEPT = "LeftoversKept";

    static String describe(UnrecordedMount m) {
        return m.volumeId().map(id -> "volume " + id + "'s device " + m.device() + " is also mounted at "
                        + m.mountPoint() + ", which no record names")
                .orElse("device " + m.device() + " (" + m.fsType() + ") is mounted at " + m.mountPoint()
                        + " in the driver's staging directory, but no record names it");
    }

    private static void table(StringBuilder out, String[] header, List<String[]> given) {
        table(out, header, given, null);
    }

    /**
     * An aligned table; with {@code nextSteps}, each row is followed by a line of its own under its last column,
     * "next: " and the row's next step.
     */
    private static void table(StringBuilder out, String[] header, List<String[]> given, List<String> nextSteps) {
        // A volume id or path is caller input: printed escaped, so it cannot break a line or forge one.
        List<String[]> rows = new ArrayList<>();
        for (String[] row : given) {
            String[] escaped = new String[row.length];
            for (int i = 0; i < row.length; i++) {
                escaped[i] = Printable.escape(row[i]);
            }
            rows.add(escaped);
        }
        int[] widths = new int[header.length];
        for (int i = 0; i < header.length; i++) {
            widths[i] = header[i].length();
            for (String[] row : rows) {
                widths[i] = Math.max(widths[i], row[i].length());
            }
        }
        List<String[]> all = new ArrayList<>();
        all.add(header);
        all.addAll(rows);
        int lastColumn = 0;
        for (int i = 0; i < widths.length - 1; i++) {
            lastColumn += widths[i] + 2;
        }
        for (int r = 0; r < all.size(); r++) {
            String[] row = all.get(r);
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < row.length; i++) {
                line.append(row[i]);  // escaped when the row was built
                if (i < row.length - 1) {
                    line.append(" ".repeat(widths[i] - row[i].length() + 2));
                }
            }
            out.append(line.toString().stripTrailing()).append('\n');
            if (nextSteps != null && r > 0) {
                out.append(" ".repeat(lastColumn)).append("next: ").append(Printable.escape(nextSteps.get(r - 1)))
                        .append('\n');
            }
        }
    }
}
