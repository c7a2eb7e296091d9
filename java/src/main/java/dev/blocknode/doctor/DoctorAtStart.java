package dev.blocknode.doctor;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * {@code blocknode doctor}'s checks, run once when the plugin starts, on a thread of their own once the socket is
 * up, so that neither readiness nor Probe waits for them (they run two tools, with timeouts). Each warning and
 * error is logged once, and every finding is exported as {@code blocknode_doctor_findings{transport, check,
 * severity}} (the number of such findings, 1 almost always) for an alert; a transport that is not set up has none.
 * The gauge is the state at start: {@code blocknode doctor} shows the node as it is now.
 */
public final class DoctorAtStart implements AutoCloseable {

    static final String FINDINGS = "blocknode_doctor_findings";
    private static final long STOP_WAIT_MILLIS = 5_000;
    private static final Logger LOG = Logger.getLogger(DoctorAtStart.class.getName());

    private final MultiGauge gauge;
    private Thread thread;

    public DoctorAtStart(MeterRegistry registry) {
        this.gauge = MultiGauge.builder(FINDINGS)
                .description("findings of blocknode doctor's checks at the plugin's start, by transport (iscsi,"
                        + " multipath, fc, nvme-tcp, kernel), check and severity (ok, warning, error): `blocknode"
                        + " doctor` in the plugin's container says what each one is and how to fix it")
                .register(registry);
    }

    /** Runs the checks on a daemon thread; returns at once. */
    public void start(Doctor doctor, Optional<Path> kubeletRoot) {
        thread = new Thread(() -> record(doctor.examine(kubeletRoot)), "doctor-at-start");
        thread.setDaemon(true);
        thread.start();
    }

    /** Logs the report's problems and sets the gauge to its findings. */
    void record(DoctorReport report) {
        Map<List<String>, Integer> counts = new LinkedHashMap<>();
        int warnings = 0;
        int errors = 0;
        for (TransportReadiness transport : report.transports()) {
            for (Finding finding : transport.findings()) {
                counts.merge(List.of(transport.transport(), finding.check(), finding.severity().label()), 1,
                        Integer::sum);
                if (finding.severity() != Severity.OK) {
                    // Host configuration, not caller input; the fix says what to do.
                    LOG.warning(() -> "doctor: " + finding.severity().label() + " in " + transport.transport() + " ("
                            + finding.check() + "): " + finding.message() + "; fix: " + finding.fix());
                    if (finding.severity() == Severity.ERROR) {
                        errors++;
                    } else {
                        warnings++;
                    }
                }
            }
        }
        int e = errors;
        int w = warnings;
        LOG.info(() -> "doctor at start: " + e + " error(s), " + w + " warning(s); run `blocknode doctor` in this"
                + " container for every finding");
        gauge.register(counts.entrySet().stream().map(row -> MultiGauge.Row.of(Tags.of("transport",
                row.getKey().get(0), "check", row.getKey().get(1), "severity", row.getKey().get(2)),
                row.getValue())).toList(), true);
    }

    /** Waits at most {@code millis} for the run to end: for tests. */
    public boolean awaitDone(long millis) throws InterruptedException {
        thread.join(Math.max(1, millis)); // join(0) would wait for ever
        return !thread.isAlive();
    }

    /**
     * Stops a run still under way: the tool it runs is killed and reaped (ProcessCommandRunner, on interrupt), and
     * so is any it starts after, so the wait is short; bounded all the same, as a shutdown must end.
     */
    @Override
    public void close() {
        if (thread == null) {
            return;
        }
        thread.interrupt();
        try {
            thread.join(STOP_WAIT_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
