package dev.blocknode.volume;

import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.scsi.LunPath;
import dev.blocknode.scsi.Wwid;
import dev.blocknode.scsi.reservation.PersistentReservations;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.FakeScsiTarget;
import dev.blocknode.testing.ScriptedTransport;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing;
import dev.blocknode.transport.san.LunFencing;
import dev.blocknode.transport.san.TakeoverRule;
import dev.blocknode.volume.read.HealthProblem;
import dev.blocknode.volume.read.VolumeStats;
import dev.blocknode.volume.request.AccessMode;
import dev.blocknode.volume.request.Requests;
import dev.blocknode.volume.request.VolumeCapability;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import static dev.blocknode.volume.LifecycleFixture.VOLUME;
import static dev.blocknode.volume.LifecycleFixture.filesystem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Fencing through the lifecycle: the stage's choice (auto, required, off; single-node modes only), the
 * reservation taken before the format and recorded, released at unstage and by a refusal's undo, renewed, and a
 * preemption by another node seen as the volume FENCED. Node A is the plugin under test over the fake machine,
 * its transport fencing with the real protocol over an in-memory SPC-4 target; node B is the protocol alone.
 */
class StageFencingUnitTest {

    private static final Duration TAKEOVER = Duration.ofSeconds(60);

    @TempDir
    Path temp;

    private LifecycleFixture node;
    private final FakeScsiTarget target = new FakeScsiTarget();
    private final AtomicLong nanos = new AtomicLong();
    private final FenceKey a = LifecycleFixture.FENCING.node();
    private final FenceKey b = FenceKey.forNode("node-b");
    private LunFencing nodeB;

    @BeforeEach
    void wire() throws IOException {
        node = new LifecycleFixture(temp);
        Wwid lun = Wwid.naa("6001405aaaabbbbccccddddeeeeffff0");
        List<LunPath> aPaths = List.of(new LunPath(Path.of("/dev/sd-a1"), lun),
                new LunPath(Path.of("/dev/sd-a2"), lun));
        LunPath bPath = new LunPath(Path.of("/dev/sd-b1"), lun);
        target.path(aPaths.get(0).device(), "a1").path(aPaths.get(1).device(), "a2").path(bPath.device(), "b1");
        node.transport.fencing(new LunFencing(new PersistentReservations(target, target.check(),
                Duration.ofSeconds(10)), attachment -> aPaths, new TakeoverRule(TAKEOVER, nanos::get)));
        nodeB = new LunFencing(new PersistentReservations(target, target.check(), Duration.ofSeconds(10)),
                attachment -> List.of(bPath), new TakeoverRule(TAKEOVER, nanos::get));
    }

    @AfterEach
    void clean() {
        node.volumes.stopFencing();
        node.assertClean();
    }

    private Requests.Stage request(String fencing, VolumeCapability capability) {
        Map<String, String> context = new HashMap<>(Map.of(ScriptedTransport.DEVICE_KEY, "vdb"));
        if (fencing != null) {
            context.put("fencing", fencing);
        }
        return new Requests.Stage(VOLUME, node.staging(VOLUME).toString(), capability, context, Map.of(),
                Secrets.NONE);
    }

    private void stage(String fencing) throws VolumeException {
        node.expectBlankFormatted(node.device);
        node.volumes.stage(request(fencing, filesystem()));
    }

    private void unstage() throws VolumeException {
        node.volumes.unstage(new Requests.Unstage(VOLUME, node.staging(VOLUME).toString()));
    }

    private boolean registered(FenceKey key) {
        return target.registrations().values().stream().anyMatch(key::isOurs);
    }

    private long reservationOuts() {
        return target.log().stream().filter(s -> s.opcode() == 0x5f).count();
    }

    @Test
    void byDefaultAStageReservesBeforeTheFormatAndRecordsTheKey() throws Exception {
        stage(null);

        StagingRecord record = node.record(VOLUME).orElseThrow();
        assertTrue(a.isOurs(record.getFenceKey()), "the key is recorded");
        assertEquals(Optional.of(record.getFenceKey()), target.holderKey());
        assertEquals(Map.of("a1", record.getFenceKey(), "a2", record.getFenceKey()), target.registrations());

        unstage();
        assertEquals(Map.of(), target.registrations(), "unstage unregisters every path");
        assertEquals(Optional.empty(), target.holder());
        assertEquals("detach vdb", node.transport.calls().getLast(), "released before the paths go");
    }

    @Test
    void aStageMeetingAnotherNodesReservationIsRefusedAndLeavesNothing() throws Exception {
        FenceKey held = assertInstanceOf(Fencing.Held.class, nodeB.acquire(VOLUME, node.device, b)).key();

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.volumes.stage(request(null, filesystem())));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(refused.getMessage().contains("reservation key " + held), refused.getMessage());
        assertTrue(node.record(VOLUME).isEmpty(), "no record left");
        assertEquals(List.of("attach " + VOLUME, "abandon " + VOLUME), node.transport.calls(), "the attach undone");
        assertFalse(registered(a));
        assertTrue(node.machine.mountPoints().isEmpty());
        assertEquals(0, target.log().stream().filter(seen -> seen.nexus().startsWith("a") && seen.opcode() == 0x5f)
                .count(), "A sent no PERSISTENT RESERVE OUT, not even to release");

        nanos.addAndGet(Duration.ofSeconds(30).toNanos());
        VolumeException retried = assertThrows(VolumeException.class,
                () -> node.volumes.stage(request(null, filesystem())));
        assertTrue(retried.getMessage().contains("unchanged for 30 s"), "the retry finds the observation the refusal"
                + " started (its undo kept it): " + retried.getMessage());
    }

    @Test
    void autoStagesUnfencedWhereTheLunCannotBeFenced() throws Exception {
        target.withoutPersistentReservations();

        stage("auto");

        assertEquals(0, node.record(VOLUME).orElseThrow().getFenceKey());
        assertEquals(0, reservationOuts());
        unstage();
        assertEquals(0, reservationOuts(), "an unfenced volume sends no reservation command at unstage");
    }

    @Test
    void aTgtLunStagesUnfencedWithAutoAndIsRefusedWithRequired() throws Exception {
        target.product("IET", "VIRTUAL-DISK");

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.volumes.stage(request("required", filesystem())));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(refused.getMessage().contains("Linux tgt"), refused.getMessage());
        assertTrue(node.record(VOLUME).isEmpty());

        stage("auto");
        assertEquals(0, node.record(VOLUME).orElseThrow().getFenceKey());
        assertEquals(0, reservationOuts());
        unstage();
    }

    @Test
    void requiredRefusesALunWithoutType5AndUndoesTheAttach() throws Exception {
        target.withoutType5();

        VolumeException refused = assertThrows(VolumeException.class,
                () -> node.volumes.stage(request("required", filesystem())));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, refused.outcome());
        assertTrue(refused.getMessage().contains("cannot be fenced"), refused.getMessage());
        assertTrue(node.record(VOLUME).isEmpty());
        assertEquals("abandon " + VOLUME, node.transport.calls().getLast());
        assertEquals(Map.of(), target.registrations());
    }

    @Test
    void requiredWithAMultiNodeModeOrATransportThatCannotFenceIsRefusedBeforeAnyAttach() throws Exception {
        VolumeException multi = assertThrows(VolumeException.class, () -> node.volumes.stage(request("required",
                filesystem(AccessMode.MULTI_NODE_READER_ONLY))));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, multi.outcome());

        node.transport.fencing(null);
        VolumeException noFencing = assertThrows(VolumeException.class,
                () -> node.volumes.stage(request("required", filesystem())));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, noFencing.outcome());
        assertTrue(noFencing.getMessage().contains("transport scripted has no fencing"), noFencing.getMessage());

        VolumeException typo = assertThrows(VolumeException.class,
                () -> node.volumes.stage(request("sometimes", filesystem())));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, typo.outcome());
        assertEquals(List.of(), node.transport.calls());
    }

    @Test
    void offAndMultiNodeVolumesAreNeverReserved() throws Exception {
        stage("off");
        assertEquals(0, node.record(VOLUME).orElseThrow().getFenceKey());
        unstage();

        node.expectBlankFormatted(node.device);
        node.volumes.stage(request(null, filesystem(AccessMode.MULTI_NODE_READER_ONLY)));
        unstage();
        assertEquals(0, reservationOuts());
    }

    @Test
    void theFencedVolumesGaugeFollowsTheRenewalsFromHeldToFencedOutAndBackToNone() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new VolumeCountGauges(node.store, node.volumes, registry);
        assertEquals(Map.of("held", 0.0, "unreachable", 0.0, "fenced_out", 0.0), fenced(registry), "0 from the start");

        stage(null);
        assertEquals(Map.of("held", 1.0, "unreachable", 0.0, "fenced_out", 0.0), fenced(registry));

        assertThrows(VolumeException.class, () -> nodeB.acquire(VOLUME, node.device, b)); // B's first look
        nanos.addAndGet(TAKEOVER.toNanos()); // A stops renewing: B takes the volume over
        assertInstanceOf(Fencing.Held.class, nodeB.acquire(VOLUME, node.device, b));
        node.volumes.fences().renewAll();
        assertEquals(Map.of("held", 0.0, "unreachable", 0.0, "fenced_out", 1.0), fenced(registry));

        unstage();
        assertEquals(Map.of("held", 0.0, "unreachable", 0.0, "fenced_out", 0.0), fenced(registry));
    }

    private static Map<String, Double> fenced(SimpleMeterRegistry registry) {
        Map<String, Double> byState = new HashMap<>();
        registry.find(VolumeCountGauges.FENCED).gauges().forEach(g -> byState.put(g.getId().getTag("state"),
                g.value()));
        return byState;
    }

    @Test
    void renewalsAdvanceTheKeyAndATakeoverIsSeenAsFencedThenUnstagedWithoutTouchingTheNewHolder()
            throws Exception {
        stage(null);
        VolumeFences fences = node.volumes.fences();
        FenceKey first = fences.currentKey(VOLUME).orElseThrow();
        fences.renewAll();
        FenceKey second = fences.currentKey(VOLUME).orElseThrow();
        assertEquals(first.generation() + 1, second.generation());
        assertEquals(Optional.of(second.value()), target.holderKey());

        assertThrows(VolumeException.class, () -> nodeB.acquire(VOLUME, node.device, b));
        nanos.addAndGet(TAKEOVER.toNanos()); // A's plugin stops renewing: its keys stand still
        FenceKey bKey = assertInstanceOf(Fencing.Held.class, nodeB.acquire(VOLUME, node.device, b)).key();
        assertFalse(target.writeAllowed("a1"));

        fences.renewAll();

        List<HealthProblem> health = node.volumes.health(new Requests.Health(VOLUME, "",
                node.staging(VOLUME).toString()));
        assertEquals(HealthProblem.Kind.FENCED, health.get(0).kind(), health.toString());
        assertTrue(health.get(0).message().contains(bKey.toString()), health.get(0).message());
        VolumeStats stats = node.volumes.stats(new Requests.Stats(VOLUME, node.staging(VOLUME).toString(), ""));
        assertTrue(stats.abnormal() && stats.condition().contains("fenced out"), "kubelets up to 1.36 read this: "
                + stats.condition());
        long outsBefore = reservationOuts();
        fences.renewAll();
        assertEquals(outsBefore, reservationOuts(), "a fenced volume is not renewed again");

        unstage();
        assertEquals(Map.of("b1", bKey.value()), target.registrations(), "B's registration untouched");
        assertEquals(Optional.of(bKey.value()), target.holderKey());
    }

    @Test
    void aRenewalLeavesAVolumeACallHoldsAlone() throws Exception {
        stage(null);
        VolumeFences fences = node.volumes.fences();
        FenceKey before = fences.currentKey(VOLUME).orElseThrow();
        OperationGuard guard = new OperationGuard();
        VolumeFences busy = new VolumeFences(LifecycleFixture.FENCING, new dev.blocknode.transport.Transports(
                List.of(node.transport)), guard);
        busy.resume(List.of(node.record(VOLUME).orElseThrow()));
        long outs = reservationOuts();

        try (OperationGuard.Permit held = guard.enter(VOLUME, "NodeUnstageVolume")) {
            busy.renewAll();
        }
        assertEquals(outs, reservationOuts(), "nothing sent while a call holds the volume");
        busy.renewAll();
        assertTrue(reservationOuts() > outs);
        assertEquals(before.generation() + 1, busy.currentKey(VOLUME).orElseThrow().generation());
        unstage();
    }

    @Test
    void aRestartedPluginResumesRenewingFromItsRecords() throws Exception {
        stage(null);
        StagingRecord record = node.record(VOLUME).orElseThrow();
        node.volumes.fences().renewAll(); // the target is a generation ahead of the record now

        VolumeFences restarted = new VolumeFences(LifecycleFixture.FENCING, new dev.blocknode.transport.Transports(
                List.of(node.transport)), new OperationGuard());
        restarted.resume(List.of(record));
        restarted.renewAll();

        FenceKey now = restarted.currentKey(VOLUME).orElseThrow();
        assertEquals(Map.of("a1", now.value(), "a2", now.value()), target.registrations(), "caught up, not fenced");
        assertEquals(Optional.empty(), restarted.problem(VOLUME));
        unstage();
    }

    @Test
    void aLostRecordStillReleasesWhatThisNodesTagHolds() throws Exception {
        stage(null);
        node.store.delete(VOLUME);

        unstage();

        assertEquals(Map.of(), target.registrations());
        assertEquals(Optional.empty(), target.holder());
    }

    @Test
    void aStageThatFailsAfterTheReservationKeepsItForTheRetryAndItsUnstageReleasesIt() throws Exception {
        node.expectProbe(node.device).returns(2, "", "");
        node.expectFormat(node.device).fails(1, "mkfs.ext4: interrupted");
        assertThrows(VolumeException.class, () -> node.volumes.stage(request(null, filesystem())));
        StagingRecord left = node.record(VOLUME).orElseThrow();
        assertTrue(a.isOurs(left.getFenceKey()), "the record (STAGING) says what to release");
        assertEquals(Optional.of(left.getFenceKey()), target.holderKey(), "held meanwhile: kubelet retries");

        node.expectBlankFormatted(node.device); // the failed mkfs left the device blank
        node.volumes.stage(request(null, filesystem()));
        FenceKey retried = FenceKey.of(node.record(VOLUME).orElseThrow().getFenceKey());
        assertEquals(FenceKey.of(left.getFenceKey()).generation() + 1, retried.generation(),
                "the retry takes its own reservation again, a generation on");
        assertEquals(Map.of("a1", retried.value(), "a2", retried.value()), target.registrations());

        unstage();
        assertEquals(Map.of(), target.registrations());
    }

    @Test
    void aRefusalAfterTheReservationReleasesIt() throws Exception {
        node.block.claimed(node.device.device(), true); // found in use once attached and reserved

        assertThrows(VolumeException.class, () -> node.volumes.stage(request(null, filesystem())));

        assertEquals(Map.of(), target.registrations());
        assertTrue(node.record(VOLUME).isEmpty());
    }
}
