package dev.blocknode.repair;

import dev.blocknode.metrics.RepairLoopCost;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.OrphanSweep;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.RepairedPaths;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.StagedForRepair;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Every interval, one pass over the staged volumes: each one no call holds is taken under its operation guard and
 * its transport's {@link PathRepair} brings back the paths that returned. Passes never overlap (a fixed
 * delay between the end of one and the start of the next); a pass starts no new volume once it has run for
 * {@link #PASS_BUDGET}, and the volumes it did not reach come first in the next one. A volume whose repair failed
 * is left alone for a growing number of passes ({@link RepairBackoff}). A volume staged with fencing is repaired
 * with its recorded key: its transport registers a returned path with this node's key before the path carries
 * writes, and only while the LUN is still reserved by this node (see {@link PathRepair#repair}). Each pass ends
 * with every transport's sweep of what it made that no staging record names any more ({@link PathRepair#sweepOrphans});
 * what a sweep leaves though nothing names it is logged when first seen and reported ({@link #keptOrphans}).
 */
public final class PathRepairLoop implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(PathRepairLoop.class.getName());
    static final String OPERATION = "path repair";
    /** Long enough for a few volumes' scans and waits (15 s for a disk, 30 s for a map), short against a minute. */
    static final Duration PASS_BUDGET = Duration.ofSeconds(60);

    private final StagedForRepair volumes;
    private final Transports transports;
    private final Duration interval;
    private final LongSupplier nanoTime;
    private final RepairBackoff backoff = new RepairBackoff();
    private final Set<String> waiting = new HashSet<>();
    private final Set<String> notReached = new LinkedHashSet<>();
    private long pass;
    /** How many volumes the last pass looked at (for {@link RepairLoopCost}). */
    private int looked;
    private volatile List<String> kept = List.of();
    /** start and close take this, not the loop's monitor, which a pass holds for as long as it runs. */
    private final Object lifecycle = new Object();
    private ScheduledExecutorService thread;

    public PathRepairLoop(StagedForRepair volumes, Transports transports, Duration interval, LongSupplier nanoTime) {
        if (interval.isZero() || interval.isNegative()) {
            throw new IllegalArgumentException("a repair loop needs an interval above zero, got " + interval);
        }
        this.volumes = volumes;
        this.transports = transports;
        this.interval = interval;
        this.nanoTime = nanoTime;
    }

    /** The first pass after one interval: start-up recovery and kubelet's re-stages come first. */
    public void start() {
        synchronized (lifecycle) {
            if (thread == null) {
                thread = schedule();
            }
        }
    }

    private ScheduledExecutorService schedule() {
        ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread t = new Thread(runnable, "blocknode-path-repair");
            t.setDaemon(true);
            return t;
        });
        long millis = interval.toMillis();
        executor.scheduleWithFixedDelay(this::meteredPass, millis, millis, TimeUnit.MILLISECONDS);
        LOG.info(() -> "path repair: every " + millis + " ms, the lost paths of staged volumes that returned are"
                + " brought back");
        return executor;
    }

    /**
     * One pass as the loop's thread runs it every interval: a failure is logged and the next pass runs all the same,
     * and the pass's CPU and the volumes it looked at are counted ({@link RepairLoopCost}). Public for the benchmark
     * that measures those counters over a fabricated node (test-e2e/bench, figure k).
     */
    public void meteredPass() {
        long cpuBefore = RepairLoopCost.threadCpuNanos();
        try {
            pass();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "path repair: a pass failed; the next one runs in " + interval.toMillis() + " ms", e);
        } finally {
            long cpuAfter = RepairLoopCost.threadCpuNanos();
            RepairLoopCost.passed(cpuBefore < 0 || cpuAfter < 0 ? -1 : cpuAfter - cpuBefore, lastLooked());
        }
    }

    synchronized int lastLooked() {
        return looked;
    }

    /** One pass over the staged volumes; what the thread runs every interval (tests call it directly). */
    public synchronized void pass() {
        pass++;
        Map<String, StagedForRepair.Candidate> candidates = new LinkedHashMap<>();
        volumes.candidates().forEach(c -> candidates.put(c.volumeId(), c));
        Set<String> staged = candidates.keySet();
        backoff.retainOnly(staged);
        waiting.retainAll(staged);
        List<String> order = new ArrayList<>(notReached);
        order.retainAll(staged);
        staged.stream().filter(v -> !order.contains(v)).forEach(order::add);
        notReached.clear();
        looked = 0;
        long start = nanoTime.getAsLong();
        for (String volumeId : order) {
            if (nanoTime.getAsLong() - start > PASS_BUDGET.toNanos()) {
                notReached.add(volumeId);
            } else if (backoff.due(volumeId, pass)) { // a volume in back-off costs no look
                looked++;
                if (mayRepair(candidates.get(volumeId))) {
                    repair(volumeId); // looked at just before it is held
                }
            }
        }
        if (!notReached.isEmpty()) {
            LOG.warning(() -> "path repair: the pass ran past " + PASS_BUDGET.toSeconds() + " s; " + notReached.size()
                    + " volume(s) wait for the next one");
        }
        sweep();
    }

    /**
     * After the staged volumes, each transport removes what it made that no record names any more, and only that
     * ({@link PathRepair#sweepOrphans}); what it leaves though it looks orphaned is logged when first seen and shown by
     * {@link #keptOrphans}.
     */
    private void sweep() {
        List<String> keptNow = new ArrayList<>();
        for (Transport transport : transports.all()) {
            Optional<PathRepair> repairs = transport.pathRepair();
            if (repairs.isEmpty()) {
                continue;
            }
            try {
                OrphanSweep swept = repairs.get().sweepOrphans(() -> volumes.recordedFor(transport.name()));
                keptNow.addAll(swept.kept());
            } catch (VolumeException | RuntimeException e) {
                LOG.log(Level.WARNING, "path repair: the sweep of " + transport.name() + " left everything as it is: "
                        + e.getMessage(), e instanceof VolumeException ? null : e);
            }
        }
        for (String thing : keptNow) {
            if (!kept.contains(thing)) {
                LOG.warning(() -> "path repair: left alone, though no staging record names it: " + thing);
            }
        }
        kept = List.copyOf(keptNow);
        volumes.reportKept(kept);
    }

    /** What the last sweep found unneeded but could not prove it may remove: reported, never touched. */
    public List<String> keptOrphans() {
        return kept;
    }

    /**
     * Whether the volume's transport sees anything to repair, looked at without holding the volume: a healthy volume
     * is never held, so kubelet's calls on it are never turned away by a pass.
     */
    private boolean mayRepair(StagedForRepair.Candidate candidate) {
        Optional<PathRepair> repairs = transports.named(candidate.attachment().transport())
                .flatMap(Transport::pathRepair);
        return repairs.isPresent() && repairs.get().mayRepair(candidate.request(), candidate.attachment());
    }

    private void repair(String volumeId) {
        Optional<StagedForRepair.Held> taken = volumes.hold(volumeId, OPERATION);
        if (taken.isEmpty()) {
            return; // a call holds it, or it is no longer staged: the next pass looks again
        }
        try (StagedForRepair.Held held = taken.get()) {
            Optional<PathRepair> repairs = transports.named(held.attachment().transport())
                    .flatMap(Transport::pathRepair);
            if (repairs.isEmpty()) {
                return;
            }
            long started = nanoTime.getAsLong();
            RepairedPaths repair = repairs.get().repair(held.request(), held.attachment(), held.fenceKey());
            if (repair.attachment().isPresent()) {
                held.recordAttachment(repair.attachment().get());
            }
            report(volumeId, repair, Duration.ofNanos(nanoTime.getAsLong() - started));
        } catch (VolumeException | RuntimeException e) {
            long skipped = backoff.failed(volumeId, pass);
            LOG.log(Level.WARNING, "volume " + volumeId + ": path repair failed (tried again in " + (skipped + 1)
                    + " pass(es)): " + e.getMessage(), e instanceof VolumeException ? null : e);
        }
    }

    private void report(String volumeId, RepairedPaths repair, Duration took) {
        if (repair.waiting().isPresent()) {
            if (waiting.add(volumeId)) {
                LOG.warning(() -> "volume " + volumeId + ": path repair waits: " + repair.waiting().get());
            }
            return;
        }
        if (waiting.remove(volumeId)) {
            LOG.info(() -> "volume " + volumeId + ": path repair no longer waits");
        }
        if (!repair.actedOn()) {
            backoff.succeeded(volumeId);
            return;
        }
        String line = "volume " + volumeId + ": path repair"
                + (repair.restored().isEmpty() ? "" : " brought back " + repair.restored())
                + (repair.wrongLun().isEmpty() ? "" : " refused another LUN at " + repair.wrongLun())
                + (repair.failed().isEmpty() ? "" : " did not bring back " + repair.failed())
                + " in " + took.toMillis() + " ms";
        if (repair.failedAny()) {
            long skipped = backoff.failed(volumeId, pass);
            LOG.warning(() -> line + "; tried again in " + (skipped + 1) + " pass(es)");
        } else {
            backoff.succeeded(volumeId);
            LOG.info(line);
        }
    }

    @Override
    public void close() {
        ScheduledExecutorService stopping;
        synchronized (lifecycle) {
            stopping = thread;
            thread = null;
        }
        if (stopping == null) {
            return;
        }
        stopping.shutdownNow(); // a repair interrupted midway is finished by the next plugin's pass: each step repeats
        try {
            stopping.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
