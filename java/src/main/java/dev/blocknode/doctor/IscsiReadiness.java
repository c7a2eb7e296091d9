package dev.blocknode.doctor;

import dev.blocknode.os.AbstractSockets;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.exec.Command;
import dev.blocknode.os.exec.CommandException;
import dev.blocknode.os.exec.CommandResult;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.transport.iscsi.InitiatorName;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * iSCSI: the initiator name the targets' access lists need, the host's iscsid (which the image's iscsiadm asks
 * to log in, over its abstract socket), whether the two are of one open-iscsi release, and whether dm-multipath
 * is there to join a volume's paths. Not set up when the node has neither an initiator name nor an iscsid.
 */
final class IscsiReadiness {

    static final Duration TOOL_TIMEOUT = Duration.ofSeconds(10);
    /** RFC 3720: iqn.YYYY-MM.reversed.domain[:anything]; eui. and 16 hex digits; RFC 3980: naa. and 16 or 32. */
    private static final Pattern IQN = Pattern.compile("iqn\\.\\d{4}-\\d{2}\\.[a-z0-9][a-z0-9.-]*(:\\S*)?");
    private static final Pattern EUI = Pattern.compile("eui\\.[0-9A-Fa-f]{16}");
    private static final Pattern NAA = Pattern.compile("naa\\.([0-9A-Fa-f]{16}|[0-9A-Fa-f]{32})");
    /** "iscsiadm version 2.1.8", "iscsid version 2.1.8". */
    private static final Pattern VERSION = Pattern.compile("version\\s+(\\S+)");
    private static final String FIX_NAME = "on the host, write InitiatorName=iqn.YYYY-MM.reversed.domain:node"
            + " (iscsi-iname makes one) to /etc/iscsi/initiatorname.iscsi and restart iscsid";

    private final HostPaths paths;
    private final CommandRunner commands;
    private final ToolOwner tools;

    IscsiReadiness(HostPaths paths, CommandRunner commands, ToolOwner tools) {
        this.paths = paths;
        this.commands = commands;
        this.tools = tools;
    }

    TransportReadiness check(AbstractSockets sockets) throws IOException {
        boolean hasNameFile = Files.exists(paths.iscsiInitiatorName());
        boolean daemon = sockets.has(AbstractSockets.ISCSID);
        if (!hasNameFile && !daemon) {
            return TransportReadiness.notSetUp(TransportReadiness.ISCSI, "no " + paths.iscsiInitiatorName()
                    + " and no iscsid listening");
        }
        List<Finding> findings = new ArrayList<>();
        findings.add(initiatorName());
        findings.add(daemon ? Finding.ok("iscsid", "iscsid listens on " + AbstractSockets.ISCSID)
                : Finding.error("iscsid", "iscsid is not running on the host (no " + AbstractSockets.ISCSID
                + " in /proc/net/unix): iSCSI logins fail", "on the host: systemctl enable --now iscsid"
                + " (or iscsid.socket)" + (tools == ToolOwner.IMAGE ? "; the pod needs hostNetwork to reach it" : "")));
        findings.add(versions());
        return TransportReadiness.of(TransportReadiness.ISCSI, findings);
    }

    static boolean wellFormed(String name) {
        return IQN.matcher(name).matches() || EUI.matcher(name).matches() || NAA.matcher(name).matches();
    }

    private Finding initiatorName() throws IOException {
        Optional<String> name = InitiatorName.read(paths);
        if (name.isEmpty()) {
            return Finding.error("initiator-name", paths.iscsiInitiatorName() + " names no InitiatorName", FIX_NAME);
        }
        if (!wellFormed(name.get())) {
            return Finding.error("initiator-name", "the initiator name \"" + name.get() + "\" is not an IQN"
                    + " (iqn.YYYY-MM.reversed.domain[:name], lower case) or an EUI (eui. and 16 hex digits)", FIX_NAME);
        }
        if (SharedIdentity.isExampleIqn(name.get())) {
            return Finding.warning("initiator-name", "the initiator name " + name.get() + " is in a domain reserved"
                    + " for examples, so it was copied, not made for this node: other nodes may present the same"
                    + " name" + SharedIdentity.CLUSTER_WIDE, "drain the node, then on the host: echo InitiatorName=$("
                    + "iscsi-iname) > /etc/iscsi/initiatorname.iscsi; systemctl restart iscsid; and put the new name"
                    + " in the targets' access lists (docs/install.md#one-identity-per-node)");
        }
        return Finding.ok("initiator-name", "initiator name " + name.get());
    }

    /**
     * The iscsiadm this process runs (the image's, or this machine's) against the host's iscsid; a host version that
     * cannot be read is no finding.
     */
    private Finding versions() {
        String iscsiadm = tools.possessive() + " iscsiadm";
        Optional<String> ours = version(Command.of("iscsiadm", "--version"));
        if (ours.isEmpty()) {
            return tools == ToolOwner.IMAGE
                    ? Finding.error("iscsiadm-version", "iscsiadm --version does not answer in this container",
                            "use the blocknode image, which has open-iscsi's iscsiadm")
                    : Finding.error("iscsiadm-version", "iscsiadm --version does not answer on this machine",
                            "install open-iscsi here (Debian, Ubuntu: apt-get install open-iscsi; RHEL:"
                            + " dnf install iscsi-initiator-utils), or run blocknode doctor from the image"
                            + " (docs/reference/cli.md)");
        }
        Optional<String> pid = IscsidProcess.find(paths.proc());
        Optional<String> host = pid.flatMap(p -> version(Command.of("nsenter", "--target", p, "--mount", "--",
                "iscsid", "--version")));
        if (host.isEmpty()) {
            return Finding.ok("iscsiadm-version", iscsiadm + " is " + ours.get() + "; the host's iscsid"
                    + " version cannot be read" + (pid.isEmpty() ? " (no iscsid process in /proc: it is not running"
                    + (tools == ToolOwner.IMAGE ? ", or the pod has no hostPID)" : ")") : ""));
        }
        if (!host.get().equals(ours.get())) {
            return Finding.warning("iscsiadm-version", iscsiadm + " is " + ours.get()
                    + " but the host's iscsid is " + host.get() + ": their IPC and node records may differ",
                    tools == ToolOwner.IMAGE ? "run a blocknode image built with open-iscsi " + host.get()
                            + ", or upgrade the host's open-iscsi to " + ours.get()
                            : "restart iscsid after an upgrade of open-iscsi, and keep one open-iscsi installed:"
                            + " iscsiadm and iscsid must be one release");
        }
        return Finding.ok("iscsiadm-version", iscsiadm + " and the host's iscsid are both " + ours.get());
    }

    private Optional<String> version(Command command) {
        try {
            CommandResult result = commands.run(command.withTimeout(TOOL_TIMEOUT));
            if (!result.succeeded()) {
                return Optional.empty();
            }
            Matcher m = VERSION.matcher(result.stdout());
            return m.find() ? Optional.of(m.group(1)) : Optional.empty();
        } catch (CommandException notRunnable) {
            return Optional.empty();
        }
    }

    /** The host's iscsid among the processes this pid namespace shows (the host's, with hostPID). */
    static final class IscsidProcess {

        private IscsidProcess() {
        }

        static Optional<String> find(Path proc) {
            try (var entries = Files.list(proc)) {
                for (Path dir : entries.filter(p -> p.getFileName().toString().chars().allMatch(Character::isDigit))
                        .sorted().toList()) {
                    try {
                        if (HostFiles.read(dir.resolve("comm")).map(String::strip).orElse("").equals("iscsid")) {
                            return Optional.of(dir.getFileName().toString());
                        }
                    } catch (IOException gone) {
                        // the process ended while we looked
                    }
                }
            } catch (IOException | RuntimeException unreadable) {
                return Optional.empty();
            }
            return Optional.empty();
        }
    }
}
