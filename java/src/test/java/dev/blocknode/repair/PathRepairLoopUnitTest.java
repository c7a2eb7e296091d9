package dev.blocknode.repair;

import dev.blocknode.metrics.RepairLoopCost;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.StagePhase;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.transport.AttachPlan;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.OrphanSweep;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.RepairedPaths;
import dev.blocknode.transport.Transport;
import dev.blocknode.transport.Transports;
import dev.blocknode.volume.OperationGuard;
import dev.blocknode.volume.StagedForRepair;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The repair loop over real staging records in a temp dir and a transport that answers scripted repairs: which
 * volumes a pass takes, that it never takes one a call holds, and how it backs off.
 */
class PathRepairLoopUnitTest {

    private static final Duration INTERVAL = Duration.ofSeconds(30);

    /** Answers each repair with the next scripted one (none left: nothing to repair) and logs the volumes asked. */
    private static final class RepairingTransport implements Transport {
        final List<String> repaired = new ArrayList<>();
        final Deque<RepairedPaths> answers = new ArrayDeque<>();
        Runnable during = () -> { };
        /** What the unheld look says; while it says no, the volume is neither held nor repaired. */
        boolean mayRepair = true;
        /** Each look, and whether the volume was held while it ran (the guard's view, set by the test). */
        final List<String> looked = new ArrayList<>();
        java.util.function.Predicate<String> held = volumeId -> false;
        /** The keys each repair was asked with. */
        final List<Optional<FenceKey>> fenceKeys = new ArrayList<>();
        /** Whether it can register a returned path with a key (false: the interface's answer for a fenced volume). */
        boolean registersPaths = true;

        @Override
        public String name() {
            return "fc";
        }

        @Override
        public Set<String> identifyingKeys() {
            return Set.of("lun");
        }

        @Override
        public AttachPlan validate(AttachRequest request) {
            return () -> request;
        }

        @Override
        public Attachment attach(AttachPlan plan) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void detach(Attachment attachment) {
        }

        @Override
        public void abandon(AttachRequest request) {
        }

        @Override
        public Optional<PathRepair> pathRepair() {
            return Optional.of(repairs);
        }

        /** The volumes each sweep found records of, and what the sweep answers. */
        final List<List<String>> sweptBeside = new ArrayList<>();
        OrphanSweep sweepAnswer = OrphanSweep.NONE;

        private final PathRepair repairs = new PathRepair() {
            @Override
            public boolean mayRepair(AttachRequest request, Attachment attachment) {
                looked.add(request.volumeId() + (held.test(request.volumeId()) ? " held" : " unheld"));
                return mayRepair;
            }

            @Override
            public RepairedPaths repair(AttachRequest request, Attachment attachment, Optional<FenceKey> fenceKey) {
                fenceKeys.add(fenceKey);
                if (fenceKey.isPresent() && !registersPaths) {
                    return PathRepair.cannotRegister(name());
                }
                repaired.add(request.volumeId() + " " + attachment.details().get("paths"));
                during.run();
                return answers.isEmpty() ? RepairedPaths.NONE : answers.poll();
            }

            @Override
            public OrphanSweep sweepOrphans(OrphanSweep.Recorded recorded) throws VolumeException {
                sweptBeside.add(recorded.read().stream().map(AttachRequest::volumeId).sorted().toList());
                return sweepAnswer;
            }
        };
    }

    @TempDir
    Path temp;

    private RecordStore store;
    private final OperationGuard guard = new OperationGuard();
    private final RepairingTransport transport = new RepairingTransport();
    private final AtomicLong nanos = new AtomicLong();

    @BeforeEach
    void store() throws Exception {
        store = new RecordStore(temp.resolve("state"));
    }

    private void record(String volumeId, StagePhase phase, long fenceKey) throws Exception {
        StagingRecord.Builder record = StagingRecord.newBuilder().setFormatVersion(RecordStore.FORMAT_VERSION)
                .setVolumeId(volumeId).setPhase(phase).setTransport("fc")
                .setStagingPath("/var/lib/kubelet/staging/" + volumeId)
                .putAttachment("paths", "1:0:0:3=sdb").putAttachment("wwid", "3600140")
                .putVolumeContext("lun", "3").setFenceKey(fenceKey);
        if (phase != StagePhase.ATTACHING) {
            record.setDevice(DeviceRecord.newBuilder().setPath("/dev/dm-0").setMajor(253).setMinor(0));
        }
        store.save(record.build());
    }

    private PathRepairLoop loop(Transport... transports) {
        return new PathRepairLoop(new StagedForRepair(store, guard), new Transports(List.of(transports)), INTERVAL,
                nanos::get);
    }

    private static RepairedPaths failed() {
        return new RepairedPaths(List.of(), List.of(), List.of("2:0:1:3: no disk appeared"));
    }

    @Test
    void aPassRepairsEveryStagedVolumeWithItsRecordedAttachment() throws Exception {
        record("vol-a", StagePhase.STAGED, 0);
        record("vol-b", StagePhase.STAGED, 0);
        record("vol-attaching", StagePhase.ATTACHING, 0);
        loop(transport).pass();
        assertEquals(List.of("vol-a 1:0:0:3=sdb", "vol-b 1:0:0:3=sdb"), transport.repaired.stream().sorted().toList());
    }

    /** After a reboot, before kubelet's stage: nothing is attached to repair, and its number names nothing of it. */
    @Test
    void aVolumeStagedInAnEarlierBootIsLeftToItsRestage() throws Exception {
        record("vol-this", StagePhase.STAGED, 0);
        store.save(store.load("vol-this").orElseThrow().toBuilder().setBootId(store.bootId()).build());
        record("vol-earlier", StagePhase.STAGED, 0);
        store.save(store.load("vol-earlier").orElseThrow().toBuilder()
                .setBootId("5f0c3a52-0000-4000-8000-00000000000e").build());
        loop(transport).pass();
        assertEquals(List.of("vol-this 1:0:0:3=sdb"), transport.repaired);
    }

    /**
     * Each pass ends with the transports' sweeps, given the records of every phase (an interrupted attach still names
     * its target); what a sweep leaves though nothing names it is what the loop reports.
     */
    @Test
    void aPassSweepsBesideTheRecordsOfEveryPhaseAndReportsWhatWasKept() throws Exception {
        record("vol-a", StagePhase.STAGED, 0);
        record("vol-attaching", StagePhase.ATTACHING, 0);
        transport.sweepAnswer = new OrphanSweep(List.of(), List.of("session9: carries a disk"));
        PathRepairLoop loop = loop(transport);
        loop.pass();
        assertEquals(List.of(List.of("vol-a", "vol-attaching")), transport.sweptBeside);
        assertEquals(List.of("session9: carries a disk"), loop.keptOrphans());
        transport.sweepAnswer = OrphanSweep.NONE;
        loop.pass();
        assertEquals(List.of(), loop.keptOrphans());
    }

    /**
     * The transport's look comes first and without holding the volume; a volume it sees nothing to repair in is
     * never held, so a pass over healthy volumes never turns a call away.
     */
    @Test
    void aVolumeWithNothingToRepairIsNeverHeld() throws Exception {
        record("vol-a", StagePhase.STAGED, 0);
        transport.held = guard::isBusy;
        transport.mayRepair = false;
        transport.during = () -> transport.looked.add("repaired while held: " + guard.isBusy("vol-a"));
        PathRepairLoop loop = loop(transport);
        loop.pass();
        loop.pass();
        assertEquals(List.of("vol-a unheld", "vol-a unheld"), transport.looked);
        assertEquals(List.of(), transport.repaired);

        transport.mayRepair = true;
        loop.pass();
        assertEquals(List.of("vol-a unheld", "vol-a unheld", "vol-a unheld", "repaired while held: true"),
                transport.looked);
        assertFalse(guard.isBusy("vol-a"));
    }

    @Test
    void aPathBackUnderAnotherNameIsRecorded() throws Exception {
        record("vol-a", StagePhase.STAGED, 0);
        transport.answers.add(new RepairedPaths(List.of("2:0:1:3=sdd"), List.of(), List.of(), Optional.empty(),
                Optional.of(Map.of("paths", "1:0:0:3=sdb,2:0:1:3=sdd", "wwid", "3600140"))));
        loop(transport).pass();
        StagingRecord now = store.load("vol-a").orElseThrow();
        assertEquals(Map.of("paths", "1:0:0:3=sdb,2:0:1:3=sdd", "wwid", "3600140"), now.getAttachmentMap());
        assertEquals(StagePhase.STAGED, now.getPhase());
        assertEquals("/dev/dm-0", now.getDevice().getPath(), "nothing else of the record changes");
    }

    @Test
    void aVolumeACallHoldsIsSkippedAndTheRepairHoldsTheVolumeAgainstCalls() throws Exception {
        record("vol-a", StagePhase.STAGED, 0);
        PathRepairLoop loop = loop(transport);
        try (OperationGuard.Permit staging = guard.enter("vol-a", "NodeStageVolume")) {
            loop.pass();
        }
        assertEquals(List.of(), transport.repaired, "never beside a stage or unstage of the same volume");

        transport.during = () -> assertEquals(VolumeException.Outcome.ABORTED, assertThrows(VolumeException.class,
                () -> guard.enter("vol-a", "NodeUnstageVolume")).outcome());
        loop.pass();
        assertEquals(1, transport.repaired.size());
        guard.enter("vol-a", "NodeUnstageVolume").close(); // released once the repair ended
    }

    @Test
    void aFencedVolumeIsRepairedWithTheKeyItsRecordHolds() throws Exception {
        record("vol-fenced", StagePhase.STAGED, 0x0123456789abcdefL);
        record("vol-plain", StagePhase.STAGED, 0);
        loop(transport).pass();
        assertEquals(2, transport.repaired.size(), transport.repaired.toString());
        assertTrue(transport.fenceKeys.contains(Optional.of(FenceKey.of(0x0123456789abcdefL))),
                "the transport registers returned paths with it: " + transport.fenceKeys);
        assertTrue(transport.fenceKeys.contains(Optional.empty()), "an unfenced volume is repaired without a key");
    }

    @Test
    void aTransportThatCannotRegisterAPathLeavesAFencedVolumeAloneAndSaysItWaits() throws Exception {
        record("vol-fenced", StagePhase.STAGED, 0x0123456789abcdefL);
        transport.registersPaths = false;
        loop(transport).pass();
        assertEquals(List.of(Optional.of(FenceKey.of(0x0123456789abcdefL))), transport.fenceKeys);
        assertEquals(List.of(), transport.repaired, "nothing brought back without a registration");
    }

    @Test
    void aVolumeWhoseRepairFailedIsLeftAloneForGrowingNumbersOfPasses() throws Exception {
        record("vol-a", StagePhase.STAGED, 0);
        PathRepairLoop loop = loop(transport);
        List<Integer> triedIn = new ArrayList<>();
        for (int pass = 1; pass <= 12; pass++) {
            transport.answers.add(failed());
            int before = transport.repaired.size();
            loop.pass();
            if (transport.repaired.size() > before) {
                triedIn.add(pass);
            } else {
                transport.answers.clear();
            }
        }
        assertEquals(List.of(1, 3, 6, 11), triedIn, "after each failure 1, 2, 4 ... passes are skipped");
    }

    @Test
    void aRepairThatFailsNothingEndsTheBackOff() throws Exception {
        record("vol-a", StagePhase.STAGED, 0);
        PathRepairLoop loop = loop(transport);
        transport.answers.add(failed());
        loop.pass(); // pass 1 fails: pass 2 skipped
        loop.pass();
        transport.answers.add(new RepairedPaths(List.of("2:0:1:3=sdd"), List.of(), List.of()));
        loop.pass(); // pass 3 restores
        loop.pass();
        loop.pass();
        assertEquals(4, transport.repaired.size());
    }

    /** The loop's cost per volume is its thread's CPU over these looks: a volume in back-off is not looked at. */
    @Test
    void aPassCountsTheVolumesItLookedAtAndNotThoseInBackOff() throws Exception {
        record("vol-a", StagePhase.STAGED, 0);
        record("vol-b", StagePhase.STAGED, 0);
        record("vol-attaching", StagePhase.ATTACHING, 0);
        PathRepairLoop loop = loop(transport);
        transport.answers.add(failed());
        loop.pass();
        assertEquals(2, loop.lastLooked());
        loop.pass(); // the volume that failed skips this pass
        assertEquals(1, loop.lastLooked());
    }

    @Test
    void theLoopsCostCountersAddUp() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Metrics.addRegistry(registry);
        try {
            RepairLoopCost.register();
            RepairLoopCost.passed(2_500_000, 7);
            RepairLoopCost.passed(-1, 3); // a JVM that cannot tell a thread's CPU: the looks still count
            assertEquals(0.0025, registry.get(RepairLoopCost.CPU).counter().count(), 1e-9);
            assertEquals(10, registry.get(RepairLoopCost.LOOKS).counter().count());
            assertTrue(RepairLoopCost.threadCpuNanos() > 0, "this JVM tells a thread's CPU time");
        } finally {
            Metrics.removeRegistry(registry);
        }
    }

    @Test
    void aPassStartsNoVolumeAfterItsBudgetAndTakesTheRestFirstNextTime() throws Exception {
        record("vol-a", StagePhase.STAGED, 0);
        record("vol-b", StagePhase.STAGED, 0);
        transport.during = () -> nanos.addAndGet(PathRepairLoop.PASS_BUDGET.toNanos() + 1);
        PathRepairLoop loop = loop(transport);
        loop.pass();
        assertEquals(1, transport.repaired.size());
        String first = transport.repaired.get(0);
        loop.pass();
        assertEquals(2, transport.repaired.size());
        assertEquals(false, transport.repaired.get(1).equals(first), "the volume not reached comes first");
    }

    @Test
    void aZeroIntervalIsNoLoop() {
        assertThrows(IllegalArgumentException.class, () -> new PathRepairLoop(new StagedForRepair(store, guard),
                new Transports(List.of(transport)), Duration.ZERO, nanos::get));
    }
}
