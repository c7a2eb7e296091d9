package dev.blocknode.client;

import dev.blocknode.Plugin;
import dev.blocknode.config.FlagParser;
import dev.blocknode.config.PluginConfig;
import dev.blocknode.logging.Printable;
import dev.blocknode.os.SmallFiles;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.wait.DeviceWaiter;
import dev.blocknode.transport.StagedVolumes;
import dev.blocknode.transport.san.FenceSettings;
import dev.blocknode.volume.StageRequestRules;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.Reader;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * {@code blocknode pv}: PersistentVolume YAML (and, with {@code --claim}, the claim bound to each) from a short
 * list of existing LUNs, each checked by NodeStageVolume's own rules first, so that what it prints is what the
 * plugin stages. All or nothing: one refused row and nothing is printed, so that a half list is never applied.
 * The exit codes are a documented interface (docs/reference/pv.md).
 */
public final class PvCommand {

    /** Exit codes (docs/reference/pv.md). */
    public static final int PRINTED = 0;
    public static final int REFUSED = 1;
    public static final int CANNOT_READ = 2;
    public static final int USAGE = 3;

    public static final String HELP = """
            usage: blocknode pv [--driver-name NAME] [--claim] [--namespace NS] [--format yaml|csv] FILE|-

            PersistentVolume YAML for existing LUNs, from a YAML or CSV list of them (docs/reference/pv.md: the
            columns, an example per transport). Each row is checked as the plugin checks a NodeStageVolume request
            for that PV, and every problem of a refused row is named with the plugin's message and the row; nothing
            is printed then. No secret is read or printed: a row's secretName becomes the PV's nodeStageSecretRef
            (an encrypted volume needs one). At most %d MiB of input, %d characters a line, %d LUNs.
            Exit code: 0 printed, 1 a row refused, 2 the input cannot be read or parsed or is past a limit,
            3 a usage error.

              --driver-name NAME  the plugin's --driver-name (default block.csi.blocknode.dev)
              --claim             also print a PersistentVolumeClaim bound to each PV (and claimRef on the PV)
              --namespace NS      the claims' namespace, and the Secrets' unless a row says (default "default")
              --format FORMAT     yaml or csv (default: from the file name's .csv, else yaml)
              FILE                the list; "-" reads standard input
            """.formatted(LimitedInput.MAX_BYTES / (1024 * 1024), LimitedInput.MAX_LINE, CheckedRows.MAX_ROWS);

    private PvCommand() {
    }

    public static int run(List<String> args, PrintStream out, PrintStream err) {
        return run(args, System.in, out, err);
    }

    public static int run(List<String> args, InputStream in, PrintStream out, PrintStream err) {
        SubcommandFlags flags;
        try {
            flags = SubcommandFlags.parse("pv", args, Set.of("--driver-name", "--namespace", "--format"),
                    Set.of("--claim"), 1);
        } catch (SubcommandFlags.UsageException e) {
            err.println(Printable.escape(e.getMessage()));
            return USAGE;
        }
        if (flags.help()) {
            out.print(HELP);
            return PRINTED;
        }
        Options options;
        try {
            options = Options.of(flags);
        } catch (BadUsage e) {
            return usage(err, e.getMessage());
        }
        CheckedRows rows = new CheckedRows(options.source(), options.driver(), options.claim(), options.namespace(),
                new StageRequestRules(Plugin.transports(Host.real(),
                        DeviceWaiter.polling(DeviceWaiter.DEFAULT_INTERVAL), FenceSettings.DEFAULTS,
                        StagedVolumes.NONE)));
        try (Reader input = new LimitedInput(options.file().equals("-") ? in : openFile(Path.of(options.file())))) {
            if (options.csv()) {
                CsvLunRows.read(input, rows);
            } else {
                YamlLunRows.read(input, rows);
            }
        } catch (IOException | IllegalArgumentException e) {
            refused(rows, err);
            err.println("blocknode pv: cannot read " + Printable.escape(options.source()) + ": " + Printable.escape(
                    e instanceof NoSuchFileException ? "no such file" : String.valueOf(e.getMessage())));
            return CANNOT_READ;
        }
        return printOrRefuse(rows, options.source(), out, err);
    }

    /** The flags' values, checked in this order; a {@link BadUsage} names the first one wrong. */
    private record Options(String driver, boolean claim, String namespace, boolean csv, String file) {

        static Options of(SubcommandFlags flags) throws BadUsage {
            String driver;
            try {
                driver = FlagParser.driverName(flags.get("--driver-name").orElse(PluginConfig.DEFAULT_DRIVER_NAME));
            } catch (IllegalArgumentException e) {
                throw new BadUsage(Printable.escape(e.getMessage()));
            }
            boolean claim = flags.has("--claim");
            String namespace = flags.get("--namespace").orElse("default");
            Optional<String> format = flags.get("--format");
            if (format.isPresent() && !format.get().equals("yaml") && !format.get().equals("csv")) {
                throw new BadUsage("--format must be yaml or csv, got \"" + Printable.escape(format.get()) + "\"");
            }
            Optional<String> file = flags.operands().stream().findFirst();
            if (file.isEmpty()) {
                throw new BadUsage("no input: give the LUN list's file, or - for standard input");
            }
            if (!namespace.matches("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")) {
                throw new BadUsage("--namespace \"" + Printable.escape(namespace) + "\" is not a namespace name");
            }
            boolean csv = format.map("csv"::equals).orElse(file.get().endsWith(".csv"));
            return new Options(driver, claim, namespace, csv, file.get());
        }

        /** How the input is named in messages. */
        String source() {
            return file.equals("-") ? "stdin" : file;
        }
    }

    /** A usage error's message, not yet escaped by {@link #usage}; no stack trace: it is a message to print. */
    private static final class BadUsage extends Exception {
        BadUsage(String message) {
            super(message, null, false, false);
        }
    }

    /** Every row read: nothing listed, or refusals (all printed, nothing else), or the YAML of every row. */
    private static int printOrRefuse(CheckedRows rows, String source, PrintStream out, PrintStream err) {
        if (rows.rows() == 0) {
            err.println("blocknode pv: " + Printable.escape(source) + " lists no LUN");
            return CANNOT_READ;
        }
        if (refused(rows, err)) {
            if (rows.refusedRows() > CheckedRows.MAX_SHOWN_REFUSALS) {
                err.println("blocknode pv: the problems of the first " + CheckedRows.MAX_SHOWN_REFUSALS
                        + " refused rows are shown");
            }
            err.println("blocknode pv: " + rows.refusedRows() + " of " + rows.rows()
                    + " row(s) refused; nothing printed");
            return REFUSED;
        }
        rows.printTo(out);
        return PRINTED;
    }

    /**
     * The LUN list's file, read as it is parsed (bounded by {@link LimitedInput}): a regular file, links followed; a
     * FIFO or a device there is refused, not waited on ({@link SmallFiles}): standard input is {@code -}.
     */
    private static InputStream openFile(Path file) throws IOException {
        try {
            return SmallFiles.openRegularFollowingLinks(file).orElseThrow(() -> new NoSuchFileException(file.toString()));
        } catch (IOException e) {
            throw e instanceof NoSuchFileException ? e : new IOException(e.getMessage() + " (for a pipe, give -"
                    + " and feed it on standard input)", e);
        }
    }

    /** Prints each refusal so far, one line a problem; true when there was one. */
    private static boolean refused(CheckedRows rows, PrintStream err) {
        rows.refusals().forEach(refusal -> err.println("blocknode pv: " + Printable.escape(refusal)));
        return !rows.refusals().isEmpty();
    }

    private static int usage(PrintStream err, String message) {
        err.println("blocknode pv: " + Printable.escape(message) + " (see pv --help)");
        return USAGE;
    }
}
