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
import dev.blocknode.state.RecordStore;
import dev.blocknode.transport.StagedVolumes;
import dev.blocknode.transport.Transports;
import dev.blocknode.transport.san.FenceSettings;
import dev.blocknode.volume.read.NodeStatusReader;
import dev.blocknode.volume.read.NodeStatusReader.NodeStatus;
import dev.blocknode.volume.read.NodeStatusReader.UnrecordedMount;
import dev.blocknode.volume.read.NodeStatusReader.Volume;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
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
            status = read(stateDir, kubelet, host);
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
        return volume.isPresent() ? printOne(status, volume.get(), json, out, err) : print(status, json, out);
    }

    private static NodeStatus read(Path stateDir, NodeStatusReader.KubeletLayout kubelet, HostPaths host)
            throws IOException {
        RecordStore.Snapshot snapshot = RecordStore.snapshot(stateDir, BootId.read(host));
        List<MountEntry> mounts = MountTable.read(host.mountInfo());
        return NodeStatusReader.read(snapshot, mounts, host, kubelet, readOnlyTransports(host));
    }

    /** Only volume {@code id}, or, when the node has no record of it, UNKNOWN_VOLUME (and in JSON, no volume). */
    private static int printOne(NodeStatus status, String id, boolean json, PrintStream out, PrintStream err) {
        List<Volume> one = status.volumes().stream().filter(v -> v.volumeId().equals(id)).toList();
        if (one.isEmpty()) {
            // An unreadable record may be this volume's: its file name cannot be told from here without
            // hashing, and it is listed, so the caller sees it.
            NodeStatus none = status.only(List.of());
            if (json) {
                out.print(StatusJson.of(none));
            }
            err.println("blocknode status: this node has no record of volume " + Printable.escape(id)
                    + (none.unreadableRecords().isEmpty() ? "" : " (but " + none.unreadableRecords().size()
                    + " record file(s) cannot be read; see status without --volume)"));
            return UNKNOWN_VOLUME;
        }
        return print(status.only(one), json, out);
    }

    private static int print(NodeStatus status, boolean json, PrintStream out) {
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
        return StatusText.of(status);
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
}
