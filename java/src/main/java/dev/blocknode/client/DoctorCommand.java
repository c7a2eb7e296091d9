package dev.blocknode.client;

import dev.blocknode.config.FlagParser;
import dev.blocknode.doctor.Doctor;
import dev.blocknode.doctor.DoctorReport;
import dev.blocknode.doctor.Finding;
import dev.blocknode.doctor.Severity;
import dev.blocknode.doctor.ToolOwner;
import dev.blocknode.doctor.TransportReadiness;
import dev.blocknode.logging.JsonString;
import dev.blocknode.logging.Printable;
import dev.blocknode.os.HostPaths;
import dev.blocknode.os.exec.CommandRunner;
import dev.blocknode.os.exec.ProcessCommandRunner;
import dev.blocknode.os.host.KernelFeatures;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * {@code blocknode doctor}: the node's readiness for each transport before any volume, as findings with their
 * fixes. Read-only; works while the plugin is down. The JSON form and the exit codes are a documented interface
 * (docs/reference/doctor.md): change them only by adding.
 */
public final class DoctorCommand {

    /** Exit codes (docs/reference/doctor.md): the worst finding, or a usage error. */
    public static final int ALL_OK = 0;
    public static final int WARNINGS = 1;
    public static final int ERRORS = 2;
    public static final int USAGE = 3;

    /** The version of the JSON form: bumped only when a field changes meaning or goes away. */
    public static final int SCHEMA_VERSION = 1;

    public static final String HELP = """
            usage: blocknode doctor [--kubelet-root DIR] [--repair-interval DURATION] [-o text|json]

            The node's readiness for each transport (iSCSI, multipath, FC, NVMe/TCP) and the kernel features the
            plugin uses, before any volume: each finding ok, warning or error, with its fix. A transport none of
            whose pieces is on the node is "not set up". Read-only; works while the plugin is down. Exit code:
            0 all ok, 1 warnings, 2 errors, 3 a usage error.

              --kubelet-root DIR   also check the kubelet root: a directory on a shared mount
              --repair-interval DURATION
                                   the plugin's --repair-interval (default 30s, 0: off), which multipath's
                                   no_path_retry is checked against
              -o, --output FORMAT  text (default) or json
            """;

    private DoctorCommand() {
    }

    public static int run(List<String> args, PrintStream out, PrintStream err) {
        return run(args, out, err, new Machine(HostPaths.real(), new ProcessCommandRunner(), KernelFeatures.real(),
                ToolOwner.of(System.getenv())));
    }

    /**
     * What the doctor examines: the host's files at {@code host}, the tools through {@code commands}, whose they are
     * (the image's, or this machine's: the findings' wording). Tests fabricate it.
     */
    public record Machine(HostPaths host, CommandRunner commands, KernelFeatures features, ToolOwner tools) {
    }

    public static int run(List<String> args, PrintStream out, PrintStream err, Machine machine) {
        SubcommandFlags flags;
        boolean json;
        try {
            flags = SubcommandFlags.parse("doctor", args, Set.of("--kubelet-root", "--repair-interval", "-o", "--output"));
            json = flags.json("doctor");
        } catch (SubcommandFlags.UsageException e) {
            err.println(Printable.escape(e.getMessage()));
            return USAGE;
        }
        if (flags.help()) {
            out.print(HELP);
            return ALL_OK;
        }
        Optional<Path> kubeletRoot = flags.get("--kubelet-root").map(Path::of);
        Duration repairInterval;
        try {
            repairInterval = flags.get("--repair-interval").map(v -> v.strip().equals("0") ? Duration.ZERO
                    : FlagParser.durationOf("repair-interval", v)).orElse(Doctor.DEFAULT_REPAIR_INTERVAL);
        } catch (IllegalArgumentException e) {
            err.println("blocknode doctor: " + Printable.escape(e.getMessage())); // it quotes the value given
            return USAGE;
        }
        DoctorReport report = new Doctor(machine.host(), machine.commands(), machine.features(), repairInterval,
                machine.tools()).examine(kubeletRoot);
        out.print(json ? json(report) : text(report));
        return exitCode(report.worst());
    }

    public static int exitCode(Severity worst) {
        return switch (worst) {
            case OK -> ALL_OK;
            case WARNING -> WARNINGS;
            case ERROR -> ERRORS;
        };
    }

    /** For a person: a one-line verdict, then each transport's findings, a fix under each problem. */
    public static String text(DoctorReport report) {
        StringBuilder out = new StringBuilder();
        long errors = count(report, Severity.ERROR);
        long warnings = count(report, Severity.WARNING);
        out.append(errors + warnings == 0 ? "ready: no warnings, no errors\n"
                : errors + " error(s), " + warnings + " warning(s)\n");
        int width = report.transports().stream().flatMap(t -> t.findings().stream())
                .mapToInt(f -> f.check().length()).max().orElse(0);
        for (TransportReadiness transport : report.transports()) {
            out.append('\n').append(transport.transport());
            if (transport.notSetUp().isPresent()) {
                out.append(": not set up (").append(Printable.escape(transport.notSetUp().get())).append(")\n");
                continue;
            }
            out.append('\n');
            for (Finding finding : transport.findings()) {
                String severity = finding.severity() == Severity.OK ? "ok" : finding.severity().name();
                out.append("  ").append(pad(severity, 9)).append(pad(finding.check(), width + 2))
                        .append(Printable.escape(finding.message())).append('\n');
                if (!finding.fix().isEmpty()) {
                    out.append("  ").append(" ".repeat(9 + width + 2)).append("fix: ")
                            .append(Printable.escape(finding.fix())).append('\n');
                }
            }
        }
        return out.toString();
    }

    private static long count(DoctorReport report, Severity severity) {
        return report.transports().stream().flatMap(t -> t.findings().stream())
                .filter(f -> f.severity() == severity).count();
    }

    private static String pad(String text, int width) {
        return text + " ".repeat(Math.max(1, width - text.length()));
    }

    /** The JSON form, schema version {@link #SCHEMA_VERSION} (docs/reference/doctor.md). */
    public static String json(DoctorReport report) {
        StringBuilder out = new StringBuilder("{\"schemaVersion\":").append(SCHEMA_VERSION)
                .append(",\"worst\":").append(JsonString.quote(report.worst().label()))
                .append(",\"transports\":[");
        for (int i = 0; i < report.transports().size(); i++) {
            TransportReadiness t = report.transports().get(i);
            out.append(i == 0 ? "" : ",").append("{\"transport\":").append(JsonString.quote(t.transport()))
                    .append(",\"setUp\":").append(t.notSetUp().isEmpty())
                    .append(",\"notSetUp\":").append(t.notSetUp().map(JsonString::quote).orElse("null"))
                    .append(",\"worst\":").append(JsonString.quote(t.worst().label()))
                    .append(",\"findings\":[");
            for (int j = 0; j < t.findings().size(); j++) {
                Finding f = t.findings().get(j);
                out.append(j == 0 ? "" : ",").append("{\"check\":").append(JsonString.quote(f.check()))
                        .append(",\"severity\":").append(JsonString.quote(f.severity().label()))
                        .append(",\"message\":").append(JsonString.quote(f.message()))
                        .append(",\"fix\":").append(JsonString.quote(f.fix())).append('}');
            }
            out.append("]}");
        }
        return out.append("]}\n").toString();
    }
}
