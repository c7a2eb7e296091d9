package dev.blocknode;

import dev.blocknode.client.CsiCommandLine;
import dev.blocknode.client.DoctorCommand;
import dev.blocknode.client.PvCommand;
import dev.blocknode.client.StatusCommand;
import dev.blocknode.config.FlagParser;
import dev.blocknode.config.PluginConfig;
import dev.blocknode.config.PluginMode;
import dev.blocknode.csi.server.UnixSocketServer;
import dev.blocknode.demo.DemoVolume;
import dev.blocknode.faults.CrashPoints;
import dev.blocknode.logging.LogFormat;
import dev.blocknode.logging.LogLevelFile;
import dev.blocknode.logging.LogSetup;
import dev.blocknode.logging.Printable;
import dev.blocknode.logging.ShutdownSafeLogManager;
import dev.blocknode.os.SmallFiles;
import dev.blocknode.os.host.Host;
import dev.blocknode.os.host.SyscallLibrary;

import java.io.IOException;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.logging.Logger;

/** Entry point: parse flags, start the plugin, serve until SIGTERM/SIGINT, then stop cleanly. */
public final class Main {

    static {
        // Before the first logger exists: keep log handlers alive through shutdown (see the class).
        System.setProperty("java.util.logging.manager", ShutdownSafeLogManager.class.getName());
    }

    private static final Logger LOG = Logger.getLogger(Main.class.getName());

    private Main() {
    }

    public static void main(String[] args) {
        UnixSocketServer.disableNettyJfrEventsUnlessAsked(); // first: before any Netty class initializes
        Optional<Subcommand> subcommand = subcommand(args);
        if (subcommand.isPresent()) {
            LogSetup.configure(LogFormat.TEXT);
            System.exit(subcommand.get().run(Arrays.asList(args).subList(1, args.length), System.out, System.err));
            return;
        }
        Optional<String> information = information(args);
        if (information.isPresent()) {
            System.out.print(information.get());
            return;
        }
        Optional<PluginConfig> parsed = parseOrRefuse(args, System.err);
        if (parsed.isEmpty()) {
            System.exit(2);
            return;
        }
        PluginConfig config = parsed.get();
        if (!prepareProcess(config)) {
            System.exit(2);
            return;
        }
        serve(config);
    }

    /** A command of the same binary (its arguments, out, err; its exit code): client, doctor, pv, status. */
    private interface Subcommand {
        int run(List<String> args, PrintStream out, PrintStream err);
    }

    /** The command the first argument names, or nothing when the arguments start a plugin. */
    private static Optional<Subcommand> subcommand(String[] args) {
        if (args.length == 0) {
            return Optional.empty();
        }
        return Optional.ofNullable(switch (args[0]) {
            case "client" -> CsiCommandLine::run;
            case "doctor" -> DoctorCommand::run;
            case "pv" -> PvCommand::run;
            case "status" -> StatusCommand::run;
            default -> null;
        });
    }

    /**
     * The process set up for the plugin: logging, crash points and the native library. False when the crash points
     * the environment names are refused (the refusal printed on stderr).
     */
    private static boolean prepareProcess(PluginConfig config) {
        LogSetup.configure(config.logFormat(), config.logLevel());
        // Read on its own thread, never waiting on what is there (a FIFO, a device): the start goes on at once.
        config.logLevelFile().ifPresent(file -> LogLevelFile.watch(file, config.logLevel(),
                SmallFiles::readRegularFollowingLinks));
        try {
            CrashPoints.checkEnvironment().ifPresent(LOG::warning);
        } catch (IllegalArgumentException e) {
            System.err.println(refusal(e.getMessage()));
            return false;
        }
        try {
            if (config.mode() == PluginMode.NODE) { // the controller side makes no syscall of its own
                SyscallLibrary.load();
            }
        } catch (Throwable e) {
            // Keep serving: Probe reports the failure, which is what an operator looks at.
            LOG.log(Level.SEVERE, "cannot load the native library; every volume operation will fail", e);
        }
        return true;
    }

    /** Runs the controller or the node side until shutdown; exits 1 when it cannot start or stops on a failure. */
    private static void serve(PluginConfig config) {
        try {
            if (config.mode() == PluginMode.CONTROLLER) {
                runController(config);
            } else {
                run(config);
            }
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.SEVERE, "blocknode stopped: " + e.getMessage(), e);
            System.exit(1);
        }
    }

    /**
     * What {@code --help} or {@code --version} asks for, printed instead of starting: the usage, or "blocknode" and
     * the version (the jar's, which a release stamps; GetPluginInfo's vendor_version). Nothing for a start.
     */
    static Optional<String> information(String[] args) {
        if (Arrays.asList(args).contains("--help") || Arrays.asList(args).contains("-h")) {
            return Optional.of(FlagParser.USAGE);
        }
        if (Arrays.asList(args).contains("--version")) {
            return Optional.of("blocknode " + Version.current() + "\n");
        }
        return Optional.empty();
    }

    /** The flags' values; or, when they are refused, the refusal printed on {@code err} and nothing. */
    static Optional<PluginConfig> parseOrRefuse(String[] args, PrintStream err) {
        try {
            return Optional.of(FlagParser.parse(args));
        } catch (IllegalArgumentException e) {
            err.println(refusal(e.getMessage()));
            return Optional.empty();
        }
    }

    /**
     * A refused start's line for a person: the message quotes what was given (a flag's value, an environment
     * variable's), so it is escaped as a log line is, and no value can clear the screen, add a line or reorder it.
     */
    static String refusal(String message) {
        return "blocknode: " + Printable.escape(String.valueOf(message));
    }

    private static void runController(PluginConfig config) throws IOException {
        ControllerPlugin plugin = ControllerPlugin.start(config);
        LOG.info(() -> "blocknode " + Version.current() + " serving the controller side of " + config.driverName()
                + " on unix://" + config.socket() + " (ControllerPublish/Unpublish for the external-attacher)");
        plugin.metrics().ifPresent(m -> LOG.info(() -> "metrics at " + m.url()));
        awaitShutdown(() -> plugin.shutdown(config.shutdownGrace()));
    }

    private static void run(PluginConfig config) throws IOException {
        Host host = Host.real();
        Plugin plugin = Plugin.start(config, host);
        LOG.info(() -> "blocknode " + Version.current() + " serving " + config.driverName() + " for node "
                + config.nodeId() + " on unix://" + config.socket() + " (kubelet root " + config.kubeletRoot()
                + ", state " + config.stateDir() + ")");
        plugin.metrics().ifPresent(m -> LOG.info(() -> "metrics at " + m.url()));
        DemoVolume demo = null;
        if (config.demo()) {
            try {
                demo = DemoVolume.create(host.commands(), config.socket(), config.stateDir().resolve("demo"),
                        config.kubeletRoot(), config.driverName());
            } catch (IOException | RuntimeException e) {
                plugin.shutdown(config.shutdownGrace());
                throw new IOException("the demo volume could not be set up: " + e.getMessage(), e);
            }
            System.out.println(demo.describe());
            System.out.println("socket   unix://" + Printable.escape(config.socket().toString()));
            plugin.metrics().ifPresent(m -> System.out.println("metrics  " + m.url()));
            System.out.println("Press Ctrl-C to unpublish, unstage and remove the demo volume.");
        }
        DemoVolume demoToClose = demo;
        awaitShutdown(() -> {
            if (demoToClose != null) {
                try {
                    demoToClose.close();
                    System.out.println("demo volume unpublished, unstaged and removed");
                } catch (IOException | RuntimeException e) {
                    LOG.log(Level.SEVERE, "demo volume teardown failed: " + e.getMessage(), e);
                }
            }
            plugin.shutdown(config.shutdownGrace());
        });
    }

    /** Serves until SIGTERM or SIGINT, whose hook runs {@code stop}; returns once it has. */
    private static void awaitShutdown(Runnable stop) {
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            LOG.info("stopping");
            stop.run();
            LOG.info("stopped");
            stopped.countDown();
        }, "shutdown"));
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
