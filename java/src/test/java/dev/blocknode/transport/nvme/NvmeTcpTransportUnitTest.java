package dev.blocknode.transport.nvme;

import dev.blocknode.logging.LogCapture;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.testing.FakeNvmeNamespace;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.QueryOnlyMounter;
import dev.blocknode.testing.RecordingBlockDevices;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.PathReport;
import dev.blocknode.transport.RepairedPaths;
import dev.blocknode.transport.StagedVolumes;
import dev.blocknode.transport.san.FenceSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The NVMe/TCP transport against a fabricated sysfs and a fake /dev/nvme-fabrics: subsystem NQN with two
 * namespaces, listening on two portals. Connects make controllers, heads and path devices as 6.1 does.
 */
class NvmeTcpTransportUnitTest {

    private static final String NQN = "nqn.2024-01.dev.blocknode:array1";
    private static final String HOST_NQN = "nqn.2014-08.org.nvmexpress:uuid:6b9c0f3e-5d0a-4b8e-9c1d-2f7a1e4b5c6d";
    private static final String HOST_ID = "6b9c0f3e-5d0a-4b8e-9c1d-2f7a1e4b5c6d";
    private static final String OTHER_HOST_ID = "0c9c0f3e-5d0a-4b8e-9c1d-2f7a1e4b5c6d";
    private static final List<String> PORTALS = List.of("127.0.0.1:4420", "127.0.0.2:4420");
    private static final FakeNvmeFabrics.Namespace NS1 = new FakeNvmeFabrics.Namespace(1,
            "0b5e1f8a-3c2d-4e6f-8a9b-1c2d3e4f5a6b", "1b5e1f8a-3c2d-4e6f-8a9b-1c2d3e4f5a6b");
    private static final FakeNvmeFabrics.Namespace NS2 = new FakeNvmeFabrics.Namespace(2,
            "0c5e1f8a-3c2d-4e6f-8a9b-1c2d3e4f5a6b", "1c5e1f8a-3c2d-4e6f-8a9b-1c2d3e4f5a6b");
    private static final String SECRET = "DHHC-1:00:c2VjcmV0LXZhbHVlLXRoYXQtbXVzdC1uZXZlci1sZWFrISE=:";

    @TempDir
    Path temp;

    private FakeSysfs sysfs;
    private ManualClock clock;
    private FakeNvmeFabrics fabrics;
    private RecordingBlockDevices blockDevices;
    private ScriptedCommandRunner commands;
    private Path hostConfig;
    /** What the staging records say, as the volume layer would answer. */
    private final List<StagedVolumes.StagedVolume> records = new CopyOnWriteArrayList<>();
    private NvmeTcpTransport transport;
    /** The array's namespace NS1 as NVMe commands find it: its reservations, for the fencing tests. */
    private final FakeNvmeNamespace namespace = new FakeNvmeNamespace(1);

    @BeforeEach
    void fabricate() throws IOException {
        sysfs = new FakeSysfs(temp);
        clock = new ManualClock();
        fabrics = new FakeNvmeFabrics(sysfs, clock).subsystem(NQN, PORTALS, NS1, NS2);
        blockDevices = new RecordingBlockDevices(sysfs.paths());
        commands = new ScriptedCommandRunner();
        hostConfig = Files.createDirectories(temp.resolve("etc-nvme"));
        Files.writeString(hostConfig.resolve("hostnqn"), HOST_NQN + "\n");
        Files.writeString(hostConfig.resolve("hostid"), HOST_ID + "\n");
        transport = transport();
    }

    /** A transport as after a restart: it knows only what sysfs and the records say. */
    private NvmeTcpTransport transport() {
        return transport(Duration.ZERO);
    }

    /** Built with the repair loop's interval (zero: no loop). */
    private NvmeTcpTransport transport(Duration repairInterval) {
        return new NvmeTcpTransport(new Host(sysfs.paths(), commands, new QueryOnlyMounter(), blockDevices)
                .withNvme(namespace), fabric(), clock.waiter(), fence(), transport -> List.copyOf(records),
                repairInterval);
    }

    /** The takeover rule and the repair's back-off measure with the test's clock. */
    private FenceSettings fence() {
        return new FenceSettings(FenceSettings.TAKEOVER_AFTER, FenceSettings.COMMAND_TIMEOUT,
                () -> clock.elapsed().toNanos());
    }

    private Fabric fabric() {
        return new Fabric(hostConfig, fabrics, fabrics,
                new NvmeTcpTransport.Timeouts(Duration.ofSeconds(30), Duration.ofSeconds(15), Duration.ofSeconds(30)));
    }

    @AfterEach
    void noCommandRan() {
        commands.assertAllConsumed();
    }

    private static AttachRequest request(String volumeId, FakeNvmeFabrics.Namespace ns, Secrets secrets,
                                         String... extra) {
        Map<String, String> context = new HashMap<>(Map.of("subsysNQN", NQN, "nvmePortals", String.join(",", PORTALS),
                "namespaceNGUID", ns.nguid()));
        for (int i = 0; i < extra.length; i += 2) {
            context.put(extra[i], extra[i + 1]);
        }
        return new AttachRequest(volumeId, context, Map.of(), secrets);
    }

    private static AttachRequest request(String volumeId, FakeNvmeFabrics.Namespace ns) {
        return request(volumeId, ns, Secrets.NONE);
    }

    /** The record a staged volume leaves, as the volume layer keeps it. */
    private void recorded(String volumeId, AttachRequest request, Attachment attachment) {
        records.add(new StagedVolumes.StagedVolume(volumeId, Optional.of(attachment.number()), request,
                attachment.details()));
    }

    /** The record of a volume whose attach is under way: no device yet. */
    private void attaching(AttachRequest request) {
        records.add(new StagedVolumes.StagedVolume(request.volumeId(), Optional.empty(), request, Map.of()));
    }

    private List<String> deletes() {
        return sysfs.writeLog().stream().filter(w -> w.endsWith("delete_controller=1")).toList();
    }

    private static VolumeException.Outcome outcome(VolumeException e) {
        return e.outcome();
    }

    /** What the repair loop asks of the transport. */
    private PathRepair repairs() {
        return transport.pathRepair().orElseThrow();
    }

    @Test
    void connectsOncePerPortalAndHandsOutTheMultipathHead() throws Exception {
        Attachment attachment = transport.attach(request("vol-1", NS1));

        assertEquals(PORTALS, fabrics.connects(), "one controller per portal");
        assertEquals(sysfs.paths().dev().resolve("nvme0n1"), attachment.device(), "the head, not a path device");
        assertEquals(new DeviceNumber(259, 0), attachment.number());
        assertEquals("uuid." + NS1.uuid(), attachment.identity());
        assertEquals(NQN, attachment.details().get("subsysNQN"));
        assertEquals("127.0.0.1:4420,127.0.0.2:4420", attachment.details().get("portals"));
        assertEquals(HOST_NQN, attachment.details().get("hostNQN"));
        assertEquals("127.0.0.1:4420=nvme0,127.0.0.2:4420=nvme1", attachment.details().get("controllers"));
        assertEquals("transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn=" + NQN + ",hostnqn=" + HOST_NQN
                + ",hostid=" + HOST_ID, fabrics.options().get(0), "the node's /etc/nvme identity, on every connect");

        // Another namespace of the subsystem: the controllers are there, nothing is connected again.
        Attachment second = transport.attach(request("vol-2", NS2));
        assertEquals(2, fabrics.connects().size());
        assertEquals(sysfs.paths().dev().resolve("nvme0n2"), second.device());
        assertTrue(sysfs.writeLog().isEmpty(), "attaching writes nothing to sysfs");
    }

    /** Stages a volume of each namespace, with its record; returns both attachments. */
    private List<Attachment> bothStaged() throws VolumeException {
        List<Attachment> attachments = new ArrayList<>();
        for (FakeNvmeFabrics.Namespace ns : List.of(NS1, NS2)) {
            AttachRequest request = request("vol-" + ns.nsid(), ns);
            Attachment attachment = transport.attach(request);
            recorded(request.volumeId(), request, attachment);
            attachments.add(attachment);
        }
        return attachments;
    }

    @Test
    void aControllerAnotherVolumeUsesIsKeptAndTheLastVolumeDeletesIt() throws Exception {
        List<Attachment> both = bothStaged();
        Attachment a = both.get(0);
        Attachment b = both.get(1);

        transport.detach(a);
        records.removeIf(r -> r.volumeId().equals("vol-1"));
        assertEquals(List.of(), deletes(), "vol-2's record keeps both controllers");
        assertEquals(2, fabrics.controllerCount());

        transport.detach(b);
        assertEquals(List.of("class/nvme/nvme0/delete_controller=1", "class/nvme/nvme1/delete_controller=1"),
                deletes());
        assertEquals(0, fabrics.controllerCount());
        assertFalse(Files.exists(sysfs.paths().dev().resolve("nvme0n1")), "the head went with the last path");
    }

    @Test
    void twoVolumesUnstagedInTurnLeaveNoControllerThoughEachSawTheOthersRecord() throws Exception {
        List<Attachment> both = bothStaged();

        transport.detach(both.get(0)); // vol-2 is staged: kept; vol-1's record goes only after detach returns
        transport.detach(both.get(1)); // vol-1's record is still there, but its device was released

        assertEquals(0, fabrics.controllerCount());
        records.clear();
        AttachRequest first = request("vol-1", NS1);
        recorded("vol-1", first, transport.attach(first));
        transport.detach(transport.attach(request("vol-2", NS2)));
        assertEquals(2, fabrics.controllerCount(), "a device attached again uses its controllers again");
    }

    @Test
    void aVolumeWhoseAttachRunsKeepsTheControllersItIsAboutToUse() throws Exception {
        AttachRequest first = request("vol-1", NS1);
        Attachment a = transport.attach(first);
        recorded("vol-1", first, a);
        attaching(request("vol-2", NS2)); // its ATTACHING record is written before its attach starts

        transport.detach(a);

        assertEquals(List.of(), deletes());
    }

    /** A record that cannot be read may be an NVMe volume on the same controllers: they are kept, not guessed. */
    @Test
    void anUnreadableRecordKeepsTheControllers() throws Exception {
        StagedVolumes withUnreadable = new StagedVolumes() {
            @Override
            public List<StagedVolume> of(String transport) {
                return List.copyOf(records);
            }

            @Override
            public List<String> unreadable() {
                return List.of("/var/lib/blocknode/volumes/0f.pb");
            }
        };
        NvmeTcpTransport restarted = new NvmeTcpTransport(new Host(sysfs.paths(), commands, new QueryOnlyMounter(),
                blockDevices), fabric(), clock.waiter(), fence(), withUnreadable, Duration.ZERO);
        Attachment a = restarted.attach(request("vol-1", NS1));

        restarted.detach(a);

        assertEquals(List.of(), deletes());
        assertEquals(2, fabrics.controllerCount());
    }

    @Test
    void aHeldDiskKeepsItsControllersEvenWithoutARecord() throws Exception {
        Attachment a = transport.attach(request("vol-1", NS1));
        blockDevices.claimed(sysfs.paths().dev().resolve("nvme0n2"), true); // mounted by hand, say

        transport.detach(a);

        assertEquals(List.of(), deletes());
        assertEquals(2, fabrics.controllerCount());
    }

    @Test
    void aLiveControllerInSysfsIsReusedAfterARestart() throws Exception {
        // Connected before the restart (or by hand, with another spelling of nothing: same portal, same host).
        fabrics.connect("transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn=" + NQN + ",hostnqn=" + HOST_NQN,
                Duration.ofSeconds(1));

        Attachment attachment = transport().attach(request("vol-1", NS1));

        assertEquals(List.of("127.0.0.1:4420", "127.0.0.2:4420"), fabrics.connects(),
                "only the portal without a controller was connected");
        assertEquals("127.0.0.1:4420=nvme0,127.0.0.2:4420=nvme1", attachment.details().get("controllers"));
    }

    @Test
    void aNamespaceWithAnotherIdentityIsRefusedAndWhatWasConnectedIsDeleted() {
        AttachRequest wrong = request("vol-1", new FakeNvmeFabrics.Namespace(1,
                "0d5e1f8a-3c2d-4e6f-8a9b-1c2d3e4f5a6b", NS1.uuid()), Secrets.NONE, "namespaceID", "1");
        attaching(wrong);

        VolumeException refused = assertThrows(VolumeException.class, () -> transport.attach(wrong));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, outcome(refused));
        assertTrue(refused.getMessage().contains("NGUID 0b5e1f8a3c2d4e6f8a9b1c2d3e4f5a6b instead of "
                + "0d5e1f8a3c2d4e6f8a9b1c2d3e4f5a6b"), refused.getMessage());
        assertEquals(0, fabrics.controllerCount(), "its own ATTACHING record keeps nothing");
        assertEquals(Duration.ZERO, clock.elapsed(), "a wrong NSID is refused at once, not at the deadline");
    }

    @Test
    void aRefusedAttachKeepsControllersAnotherStagedVolumeUses() throws Exception {
        AttachRequest good = request("vol-1", NS1);
        Attachment a = transport.attach(good);
        recorded("vol-1", good, a);
        AttachRequest wrong = request("vol-2", new FakeNvmeFabrics.Namespace(2,
                "0d5e1f8a-3c2d-4e6f-8a9b-1c2d3e4f5a6b", NS1.uuid()), Secrets.NONE, "namespaceID", "2");

        VolumeException refused = assertThrows(VolumeException.class, () -> transport.attach(wrong));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, outcome(refused));
        assertEquals(2, fabrics.controllerCount());
        assertEquals(List.of(), deletes());
    }

    @Test
    void aNamespaceThatNeverAppearsIsRefusedAtTheDeadlineNamingWhatTheControllersReach() {
        AttachRequest absent = request("vol-1", new FakeNvmeFabrics.Namespace(9,
                "0d5e1f8a-3c2d-4e6f-8a9b-1c2d3e4f5a6b", NS1.uuid()));

        VolumeException refused = assertThrows(VolumeException.class, () -> transport.attach(absent));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, outcome(refused));
        assertTrue(refused.getMessage().contains("nvme0 (127.0.0.1:4420, live) reaches only [nvme0c0n1, nvme0c0n2]"),
                refused.getMessage());
        assertEquals(Duration.ofSeconds(15), clock.elapsed());
        assertEquals(0, fabrics.controllerCount());
    }

    @Test
    void theWaitForTheNamespaceEndsWhenItAppears() throws Exception {
        fabrics.namespacesAppearAfter(Duration.ofSeconds(2));

        Attachment attachment = transport.attach(request("vol-1", NS1));

        assertEquals(sysfs.paths().dev().resolve("nvme0n1"), attachment.device());
        assertEquals(Duration.ofSeconds(2), clock.elapsed(), "no later than the first look after the scan");
    }

    @Test
    void secretsOnAKernelWithoutAuthenticationAreRefusedAndEverythingUndone() {
        AttachRequest request = request("vol-1", NS1, new Secrets(Map.of("dhchap_secret", SECRET)));
        attaching(request);
        try (LogCapture log = LogCapture.installed()) {
            VolumeException refused = assertThrows(VolumeException.class, () -> transport.attach(request));

            assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, outcome(refused));
            assertTrue(refused.getMessage().contains("cannot authenticate"), refused.getMessage());
            assertFalse(refused.getMessage().contains(SECRET));
            assertTrue(log.written().stream().noneMatch(w -> w.text().contains("c2VjcmV0")), "no secret in a log");
        }
        assertEquals(0, fabrics.controllerCount(), "the unauthenticated controllers are deleted");
        assertTrue(fabrics.options().get(0).endsWith(",dhchap_secret=" + SECRET),
                "the key went to /dev/nvme-fabrics (and the kernel ignored it)");
    }

    @Test
    void secretsOnAKernelThatAuthenticatesGoOnlyToTheFabricsDevice() throws Exception {
        fabrics.authenticating();
        AttachRequest request = request("vol-1", NS1, new Secrets(Map.of("dhchap_secret", SECRET)));
        try (LogCapture log = LogCapture.installed()) {
            Attachment attachment = transport.attach(request);

            assertTrue(log.written().stream().noneMatch(w -> w.text().contains("c2VjcmV0")));
            assertFalse(attachment.details().toString().contains("c2VjcmV0"), "nothing for the record");
        }
        // A controller connected without keys is no authenticated path for a volume that gives them.
        AttachRequest unauthenticated = request("vol-2", NS2);
        transport.attach(unauthenticated);
        Files.writeString(sysfs.sys().resolve("class/nvme/nvme0/dhchap_secret"), "none\n");
        VolumeException refused = assertThrows(VolumeException.class, () -> transport.attach(
                request("vol-3", NS2, new Secrets(Map.of("dhchap_secret", SECRET)))));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, outcome(refused));
        assertTrue(refused.getMessage().contains("was connected without the DH-HMAC-CHAP keys"), refused.getMessage());
    }

    @Test
    void twoVolumesOfOneSubsystemStagedAtOnceConnectOncePerPortal() throws Exception {
        CountDownLatch gate = new CountDownLatch(1);
        fabrics.connectsWaitFor(gate);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<Attachment> a = pool.submit(() -> transport.attach(request("vol-1", NS1)));
            Future<Attachment> b = pool.submit(() -> transport.attach(request("vol-2", NS2)));
            gate.countDown();
            assertEquals(sysfs.paths().dev().resolve("nvme0n1"), a.get(30, TimeUnit.SECONDS).device());
            assertEquals(sysfs.paths().dev().resolve("nvme0n2"), b.get(30, TimeUnit.SECONDS).device());
        } finally {
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
        }
        assertEquals(PORTALS, fabrics.connects().stream().sorted().toList(), "one connect per portal, not per volume");
    }

    @Test
    void ipv6PortalsConnectWithoutBracketsAndMatchSysfsInAnySpelling() throws Exception {
        fabrics.subsystem(NQN, List.of("[fd00:0:0:0:0:0:0:1]:4420", "[fd00:0:0:0:0:0:0:2]:4421"), NS1);
        // A controller made by hand to the first portal, spelled short: the same portal.
        fabrics.connect("transport=tcp,traddr=fd00::1,trsvcid=4420,nqn=" + NQN + ",hostnqn=" + HOST_NQN,
                Duration.ofSeconds(1));
        AttachRequest request = request("vol-6", NS1, Secrets.NONE, "nvmePortals", "[FD00::1],[fd00::2]:4421");

        Attachment attachment = transport.attach(request);

        assertEquals(2, fabrics.connects().size(), "the hand-made controller was reused");
        assertTrue(fabrics.options().get(1).contains(",traddr=fd00:0:0:0:0:0:0:2,trsvcid=4421,"),
                fabrics.options().get(1));
        assertEquals("[fd00:0:0:0:0:0:0:1]:4420,[fd00:0:0:0:0:0:0:2]:4421", attachment.details().get("portals"));
        recorded("vol-6", request, attachment);
        records.clear();
        transport.detach(attachment);
        assertEquals(0, fabrics.controllerCount());
    }

    @Test
    void abandonDeletesWhatAnInterruptedAttachConnected() throws Exception {
        AttachRequest interrupted = request("vol-1", NS1);
        attaching(interrupted);
        transport.attach(interrupted); // the plugin died before the device was recorded

        transport().abandon(interrupted);

        assertEquals(0, fabrics.controllerCount());
        transport().abandon(interrupted); // idempotent: nothing left, nothing done
        assertEquals(2, deletes().size());
    }

    @Test
    void anAttachRefusedForWantOfAHostNqnLeavesNothingToUndo() throws Exception {
        Files.delete(hostConfig.resolve("hostnqn"));
        AttachRequest request = request("vol-1", NS1);
        attaching(request);

        assertThrows(VolumeException.class, () -> transport.attach(request));
        transport.abandon(request); // what the refusal's undo and the start-up recovery call: no error, for ever

        assertEquals(List.of(), fabrics.connects());
    }

    @Test
    void abandonKeepsControllersAnotherVolumeUses() throws Exception {
        AttachRequest staged = request("vol-1", NS1);
        recorded("vol-1", staged, transport.attach(staged));
        AttachRequest interrupted = request("vol-2", NS2);
        attaching(interrupted);

        transport().abandon(interrupted);

        assertEquals(2, fabrics.controllerCount());
    }

    @Test
    void aHeadIsTracedToItsControllersForATeardownWithoutARecord() throws Exception {
        Attachment attached = transport.attach(request("vol-1", NS1));

        Optional<Attachment> traced = transport().attachmentOf(attached.number());

        assertTrue(traced.isPresent());
        assertEquals(attached.device(), traced.get().device());
        assertEquals(attached.identity(), traced.get().identity());
        assertEquals(Map.of("subsysNQN", NQN, "portals", "127.0.0.1:4420,127.0.0.2:4420", "hostNQN", HOST_NQN),
                traced.get().details());
        transport.detach(traced.get());
        assertEquals(0, fabrics.controllerCount());
    }

    @Test
    void aLocalPcieNamespaceIsNeverRecognized() throws Exception {
        Path controller = sysfs.sys().resolve("devices/pci0000:00/0000:00:04.0/nvme/nvme7");
        FakeSysfs.attribute(controller.resolve("transport"), "pcie");
        FakeSysfs.attribute(controller.resolve("address"), "0000:00:04.0");
        FakeSysfs.attribute(controller.resolve("state"), "live");
        FakeSysfs.attribute(controller.resolve("subsysnqn"), "nqn.2014.08.org.nvmexpress:80868086disk");
        FakeSysfs.link(sysfs.sys().resolve("class/nvme/nvme7"), controller);
        sysfs.addBlockDeviceAt(controller.resolve("nvme7n1"), "nvme7n1", new DeviceNumber(259, 40));

        assertEquals(Optional.empty(), transport.attachmentOf(new DeviceNumber(259, 40)));
    }

    @Test
    void pathHealthReadsControllerStateAndAnaStateFromSysfs() throws Exception {
        Attachment attachment = transport.attach(request("vol-1", NS1));
        assertEquals(new PathReport(2, List.of(), Optional.empty()), transport.pathHealth(attachment).orElseThrow());

        fabrics.ana("nvme1", "inaccessible");
        PathReport ana = transport.pathHealth(attachment).orElseThrow();
        assertEquals(1, ana.serving());
        assertEquals(List.of("nvme1 (127.0.0.2:4420) is ANA inaccessible"), ana.failures());
        assertEquals(Optional.of("namespace nvme0n1 serves on 1 path(s); nvme1 (127.0.0.2:4420) is ANA inaccessible"),
                ana.problem());

        fabrics.set("nvme0", "state", "connecting");
        PathReport none = transport.pathHealth(attachment).orElseThrow();
        assertEquals(0, none.serving());
        assertEquals(List.of("nvme0 (127.0.0.1:4420) is connecting", "nvme1 (127.0.0.2:4420) is ANA inaccessible"),
                none.failures());
    }

    @Test
    void growingRescansEveryController() throws Exception {
        Attachment attachment = transport.attach(request("vol-1", NS1));

        transport.refreshSize(attachment);

        assertEquals(List.of("class/nvme/nvme0/rescan_controller=1", "class/nvme/nvme1/rescan_controller=1"),
                sysfs.writeLog());
    }

    @Test
    void severalPortalsWithNativeMultipathOffAreRefusedBeforeAnyConnect() throws Exception {
        FakeSysfs.attribute(sysfs.sys().resolve("module/nvme_core/parameters/multipath"), "N");

        VolumeException refused = assertThrows(VolumeException.class, () -> transport.attach(request("vol-1", NS1)));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, outcome(refused));
        assertEquals(List.of(), fabrics.connects());
    }

    @Test
    void theVolumeContextOverridesTheHostIdentityAndANodeWithoutOneIsRefused() throws Exception {
        String other = "nqn.2024-01.dev.blocknode:node-b";
        transport.attach(request("vol-1", NS1, Secrets.NONE, "hostNQN", other,
                "hostID", "7b9c0f3e-5d0a-4b8e-9c1d-2f7a1e4b5c6d"));
        assertTrue(fabrics.options().get(0).contains(",hostnqn=" + other + ",hostid=7b9c0f3e-"),
                fabrics.options().get(0));

        Files.delete(hostConfig.resolve("hostnqn"));
        VolumeException refused = assertThrows(VolumeException.class, () -> transport.attach(request("vol-2", NS2)));
        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, outcome(refused));
        assertTrue(refused.getMessage().contains("/etc/nvme/hostnqn is missing"), refused.getMessage());
    }

    @Test
    void aPortalThatRefusesTheConnectLeavesTheOtherPath() throws Exception {
        fabrics.subsystem(NQN, List.of(PORTALS.get(0)), NS1);

        Attachment attachment = transport.attach(request("vol-1", NS1));

        assertEquals("127.0.0.1:4420=nvme0", attachment.details().get("controllers"));
        assertEquals("127.0.0.1:4420,127.0.0.2:4420", attachment.details().get("portals"),
                "both portals recorded: the teardown looks at each");
        PathReport report = transport.pathHealth(attachment).orElseThrow();
        assertEquals(List.of("127.0.0.2:4420 has no controller"), report.failures());
    }

    @Test
    void aReconnectingControllerIsUsedButNotWaitedFor() throws Exception {
        fabrics.namespacesAppearAfter(Duration.ofHours(1));
        fabrics.connect("transport=tcp,traddr=127.0.0.2,trsvcid=4420,nqn=" + NQN + ",hostnqn=" + HOST_NQN
                + ",hostid=" + HOST_ID, Duration.ofSeconds(1));
        fabrics.set("nvme0", "state", "connecting"); // its path went before it reached a namespace
        fabrics.namespacesAppearAfter(Duration.ZERO);

        Attachment attachment = transport.attach(request("vol-1", NS1));

        assertEquals(List.of("127.0.0.2:4420", "127.0.0.1:4420"), fabrics.connects(), "no second controller");
        assertEquals(Duration.ZERO, clock.elapsed(), "the live path is enough: no wait for the reconnecting one");
        assertEquals("127.0.0.1:4420=nvme1", attachment.details().get("controllers"));
        assertEquals(List.of("nvme0 (127.0.0.2:4420) is connecting"),
                transport.pathHealth(attachment).orElseThrow().failures());
    }

    @Test
    void noPortalConnectingIsInternalNamingEachPortal() {
        fabrics.subsystem(NQN, List.of(), NS1);

        VolumeException failed = assertThrows(VolumeException.class, () -> transport.attach(request("vol-1", NS1)));

        assertEquals(VolumeException.Outcome.INTERNAL, outcome(failed));
        assertTrue(failed.getMessage().contains(
                "127.0.0.1:4420: Connection refused; 127.0.0.2:4420: Connection refused"), failed.getMessage());
    }

    @Test
    void detachWithoutTheSubsystemInTheRecordFailsNamingTheDevice() {
        Attachment bare = new Attachment("nvme-tcp", sysfs.paths().dev().resolve("nvme0n1"), new DeviceNumber(259, 0),
                "", Map.of());

        VolumeException failed = assertThrows(VolumeException.class, () -> transport.detach(bare));

        assertEquals(VolumeException.Outcome.INTERNAL, outcome(failed));
        assertTrue(failed.getMessage().contains("nvme0n1"), failed.getMessage());
        assertEquals(new ArrayList<>(), deletes());
    }

    // ------------------------------------------------------------------------------------------ path repair

    /** vol-1 staged over both portals and recorded, as the repair loop finds it. */
    private Attachment stagedOverBothPortals(AttachRequest request) throws Exception {
        Attachment attachment = transport.attach(request);
        recorded(request.volumeId(), request, attachment);
        return attachment;
    }

    @Test
    void repairConnectsAgainTheControllerTheKernelDeletedAndChecksItsNamespace() throws Exception {
        AttachRequest request = request("vol-1", NS1, Secrets.NONE, "namespaceID", "1");
        Attachment attachment = stagedOverBothPortals(request);
        assertFalse(repairs().mayRepair(request, attachment), "both controllers live: nothing to look at");
        fabrics.lostPastCtrlLossTmo("127.0.0.2:4420");
        int writes = sysfs.writeLog().size();

        assertTrue(repairs().mayRepair(request, attachment));
        assertEquals(List.of("127.0.0.2:4420 has no controller"),
                transport.pathHealth(attachment).orElseThrow().failures(), "health reports it until it is back");
        RepairedPaths repair = repairs().repair(request, attachment, Optional.empty());

        assertEquals(List.of("127.0.0.2:4420=nvme2"), repair.restored());
        assertFalse(repair.failedAny());
        assertEquals(List.of("127.0.0.1:4420", "127.0.0.2:4420", "127.0.0.2:4420"), fabrics.connects());
        assertTrue(fabrics.options().get(2).contains("hostnqn=" + HOST_NQN + ",hostid=" + HOST_ID),
                "the stage's connect: " + fabrics.options().get(2));
        assertEquals(writes, sysfs.writeLog().size(), "nothing deleted, rescanned or written");
        assertEquals(new PathReport(2, List.of(), Optional.empty()), transport.pathHealth(attachment).orElseThrow());
        assertFalse(repairs().mayRepair(request, attachment));
    }

    /**
     * One registration covers every controller with the node's host ID: a fenced volume's lost controller is
     * connected again with the host ID it was staged with, and counted back.
     */
    @Test
    void aFencedVolumesControllerIsReconnectedWithItsStagedHostId() throws Exception {
        AttachRequest request = request("vol-1", NS1);
        Attachment attachment = stagedOverBothPortals(request);
        fabrics.lostPastCtrlLossTmo("127.0.0.2:4420");

        RepairedPaths repair = repairs().repair(request, attachment, Optional.of(FenceKey.of(0x0123456789abcdefL)));

        assertEquals(List.of("127.0.0.2:4420=nvme2"), repair.restored());
        assertTrue(fabrics.options().get(2).contains(",hostid=" + HOST_ID), fabrics.options().get(2));
    }

    /** A node whose host ID changed since the stage would come back as another, unregistered host: no connect. */
    @Test
    void aFencedVolumeIsNotReconnectedAsAnotherHostId() throws Exception {
        AttachRequest request = request("vol-1", NS1);
        Attachment attachment = stagedOverBothPortals(request);
        fabrics.lostPastCtrlLossTmo("127.0.0.2:4420");
        Files.writeString(hostConfig.resolve("hostid"), OTHER_HOST_ID + "\n");

        RepairedPaths repair = repairs().repair(request, attachment, Optional.of(FenceKey.of(0x0123456789abcdefL)));

        assertEquals(List.of(), repair.restored());
        assertTrue(repair.waiting().orElseThrow().contains("host ID is no longer " + HOST_ID), repair.toString());
        assertEquals(2, fabrics.connects().size(), "only the stage's connects");
    }

    /** A controller that came back as another host (a kernel that kept another host ID) is not counted back. */
    @Test
    void aFencedVolumesControllerBackAsAnotherHostIdIsNotCountedRestored() throws Exception {
        AttachRequest request = request("vol-1", NS1);
        Attachment attachment = stagedOverBothPortals(request);
        fabrics.lostPastCtrlLossTmo("127.0.0.2:4420");
        fabrics.connectsAsHostId(OTHER_HOST_ID);

        RepairedPaths repair = repairs().repair(request, attachment, Optional.of(FenceKey.of(0x0123456789abcdefL)));

        assertEquals(List.of(), repair.restored());
        assertTrue(repair.failedAny());
        assertTrue(repair.failed().get(0).contains("host ID " + OTHER_HOST_ID + ", not " + HOST_ID),
                repair.failed().toString());
    }

    /** Without a recorded host ID nothing proves a new controller would be covered: the repair waits. */
    @Test
    void aFencedVolumeStagedWithoutAHostIdIsNotReconnectedAndTheRepairSaysItWaits() throws Exception {
        Files.delete(hostConfig.resolve("hostid"));
        AttachRequest request = request("vol-1", NS1);
        Attachment attachment = stagedOverBothPortals(request);
        fabrics.lostPastCtrlLossTmo("127.0.0.2:4420");

        RepairedPaths repair = repairs().repair(request, attachment, Optional.of(FenceKey.of(0x0123456789abcdefL)));

        assertEquals(Optional.of("transport nvme-tcp cannot register a returned path with this node's reservation key,"
                + " so the lost paths of a fenced volume are not brought back"), repair.waiting());
        assertEquals(2, fabrics.connects().size(), "only the stage's connects");
    }

    // ------------------------------------------------------------------------------------------ fencing

    private static final FenceKey NODE = FenceKey.forNode("node-a");

    /** Attaches NS1 with {@code extra} volume_context keys; NVMe commands through its head reach {@link #namespace}. */
    private Attachment attachedForFencing(String... extra) throws Exception {
        Attachment attachment = transport.attach(request("vol-1", NS1, Secrets.NONE, extra));
        namespace.device(attachment.device(), "this-node", attachment.number());
        return attachment;
    }

    /** What volume_context fencing=required needs of the transport: a Fencing that holds the namespace. */
    @Test
    void aRequiredFencedVolumeHoldsItsNamespaceThroughTheHead() throws Exception {
        Attachment attachment = attachedForFencing("fencing", "required");
        Fencing fencing = transport.fencing().orElseThrow(() -> new AssertionError("nvme-tcp offers no fencing"));

        Fencing.Held held = assertInstanceOf(Fencing.Held.class, fencing.acquire("vol-1", attachment, NODE));

        assertEquals(HOST_ID, attachment.details().get("hostID"));
        assertEquals(NODE.withGeneration(1), held.key());
        assertEquals(2, held.paths(), "both controllers carry the node's host ID: one registration covers them");
        assertEquals(Map.of("this-node", held.key().value()), namespace.registrations());
        assertEquals("this-node", namespace.holder());
        assertEquals(new Fencing.Renewed(held.key().next()), fencing.renew("vol-1", attachment, held.key()));

        fencing.release("vol-1", attachment, held.key().next());

        assertEquals(Map.of(), namespace.registrations());
    }

    @Test
    void withoutAHostIdTheVolumeCannotBeFencedAndNothingIsSent() throws Exception {
        Files.delete(hostConfig.resolve("hostid"));
        Attachment attachment = attachedForFencing();

        Fencing.Acquired acquired = transport.fencing().orElseThrow().acquire("vol-1", attachment, NODE);

        Fencing.Unsupported unsupported = assertInstanceOf(Fencing.Unsupported.class, acquired);
        assertTrue(unsupported.why().startsWith("no host ID configured"), unsupported.why());
        assertEquals(List.of(), namespace.log());
    }

    @Test
    void aControllerConnectedAsAnotherHostIsRefusedNamingIt() throws Exception {
        Attachment attachment = attachedForFencing();
        String byHand = fabrics.controllerAt("127.0.0.2:4420").orElseThrow();
        fabrics.set(byHand, "hostid", OTHER_HOST_ID);

        VolumeException refused = assertThrows(VolumeException.class,
                () -> transport.fencing().orElseThrow().acquire("vol-1", attachment, NODE));

        assertEquals(VolumeException.Outcome.FAILED_PRECONDITION, outcome(refused));
        assertTrue(refused.getMessage().contains("controller " + byHand), refused.getMessage());
        assertEquals(List.of(), namespace.log(), "no command sent");
    }

    @Test
    void aHeadThatIsAnotherDiskNowGetsNoCommand() throws Exception {
        Attachment attachment = attachedForFencing();
        Attachment stale = new Attachment(attachment.transport(), attachment.device(), attachment.number(),
                "uuid.99999999-3c2d-4e6f-8a9b-1c2d3e4f5a6b", attachment.details());

        Fencing.Renewal renewal = transport.fencing().orElseThrow().renew("vol-1", stale, NODE);

        assertInstanceOf(Fencing.Unreachable.class, renewal);
        assertEquals(List.of(), namespace.log());
    }

    @Test
    void repairLeavesAControllerTheKernelReconnectsAlone() throws Exception {
        AttachRequest request = request("vol-1", NS1);
        Attachment attachment = stagedOverBothPortals(request);
        fabrics.set(fabrics.controllerAt("127.0.0.2:4420").orElseThrow(), "state", "connecting");

        assertFalse(repairs().mayRepair(request, attachment));
        assertEquals(RepairedPaths.NONE, repairs().repair(request, attachment, Optional.empty()));
        assertEquals(2, fabrics.connects().size(), "no second controller to a portal the kernel reconnects");
    }

    @Test
    void aRefusedReconnectBacksOffPerPortalAndShowsInPathHealth() throws Exception {
        AttachRequest request = request("vol-1", NS1);
        Attachment attachment = stagedOverBothPortals(request);
        fabrics.lostPastCtrlLossTmo("127.0.0.2:4420");
        fabrics.reachable("127.0.0.2:4420", false);

        RepairedPaths refused = repairs().repair(request, attachment, Optional.empty());

        assertEquals(Optional.of("the portal(s) refuse the connect: 127.0.0.2:4420: the connect failed: Connection"
                + " refused (not tried again for 10 s)"), refused.waiting(), "the outage itself: waits, no volume back-off");
        assertTrue(transport.pathHealth(attachment).orElseThrow().failures().get(0)
                .contains("reconnecting it failed: the connect failed"), "health says why it is still lost");
        assertFalse(repairs().mayRepair(request, attachment), "backing off: the volume is not held for it");
        assertTrue(repairs().repair(request, attachment, Optional.empty()).waiting().isPresent());
        assertEquals(2, fabrics.connects().size(), "no connect while backing off");

        fabrics.reachable("127.0.0.2:4420", true);
        clock.advance(NvmePathRepair.CONNECT_BACKOFF_FIRST);
        assertTrue(repairs().mayRepair(request, attachment));
        assertEquals(List.of("127.0.0.2:4420=nvme2"),
                repairs().repair(request, attachment, Optional.empty()).restored());
        assertEquals(new PathReport(2, List.of(), Optional.empty()), transport.pathHealth(attachment).orElseThrow(),
                "the failure is forgotten once the controller is back");
    }

    /**
     * With a repair interval shorter than the back-off's first wait (the VM tier's 5 s), a refused connect is tried
     * again on the next pass: a controller back right after it is connected within two intervals.
     */
    @Test
    void aRefusedReconnectIsTriedAgainOnTheNextPassOfAShortInterval() throws Exception {
        transport = transport(Duration.ofSeconds(5));
        AttachRequest request = request("vol-1", NS1);
        Attachment attachment = stagedOverBothPortals(request);
        fabrics.lostPastCtrlLossTmo("127.0.0.2:4420");
        fabrics.reachable("127.0.0.2:4420", false);

        assertTrue(repairs().repair(request, attachment, Optional.empty()).waiting().orElseThrow()
                .endsWith("(not tried again for 5 s)"));
        fabrics.reachable("127.0.0.2:4420", true);
        clock.advance(Duration.ofSeconds(4));
        assertFalse(repairs().mayRepair(request, attachment), "not before the next pass");
        clock.advance(Duration.ofSeconds(1));

        assertTrue(repairs().mayRepair(request, attachment));
        assertEquals(List.of("127.0.0.2:4420=nvme2"),
                repairs().repair(request, attachment, Optional.empty()).restored());
    }

    /** However many passes the outage lasted: refusals at once cost nothing, so the wait does not grow. */
    @Test
    void connectsRefusedAtOnceThroughALongOutageKeepTheFirstWait() throws Exception {
        transport = transport(Duration.ofSeconds(5));
        AttachRequest request = request("vol-1", NS1);
        Attachment attachment = stagedOverBothPortals(request);
        fabrics.lostPastCtrlLossTmo("127.0.0.2:4420");
        fabrics.reachable("127.0.0.2:4420", false);

        for (int pass = 0; pass < 4; pass++) {
            assertTrue(repairs().repair(request, attachment, Optional.empty()).waiting().orElseThrow()
                    .endsWith("(not tried again for 5 s)"), "pass " + pass);
            clock.advance(Duration.ofSeconds(5));
        }
        fabrics.reachable("127.0.0.2:4420", true);

        assertTrue(repairs().mayRepair(request, attachment));
        assertEquals(List.of("127.0.0.2:4420=nvme2"),
                repairs().repair(request, attachment, Optional.empty()).restored());
    }

    /**
     * On a loaded node the kernel's ECONNREFUSED can take seconds to come back (2.1 s in the VM tier): still a refusal,
     * so the wait stays one interval, and a controller back right after it is connected on the next pass.
     */
    @Test
    void aSlowRefusalKeepsTheFirstWait() throws Exception {
        transport = transport(Duration.ofSeconds(5));
        AttachRequest request = request("vol-1", NS1);
        Attachment attachment = stagedOverBothPortals(request);
        fabrics.lostPastCtrlLossTmo("127.0.0.2:4420");
        fabrics.reachable("127.0.0.2:4420", false);
        fabrics.failedConnectsTake(NvmePathRepair.FAILED_AT_ONCE.plusSeconds(1));

        for (int pass = 0; pass < 2; pass++) {
            assertTrue(repairs().repair(request, attachment, Optional.empty()).waiting().orElseThrow()
                    .endsWith("(not tried again for 5 s)"), "pass " + pass);
            clock.advance(Duration.ofSeconds(5));
        }
        fabrics.reachable("127.0.0.2:4420", true);

        assertTrue(repairs().mayRepair(request, attachment), "the next pass tries again");
        assertEquals(List.of("127.0.0.2:4420=nvme2"),
                repairs().repair(request, attachment, Optional.empty()).restored());
    }

    /** A connect that got no answer cost its whole timeout: the next waits double, bounding what an outage costs. */
    @Test
    void aSlowFailureThatIsNoRefusalDoublesTheWait() throws Exception {
        transport = transport(Duration.ofSeconds(5));
        AttachRequest request = request("vol-1", NS1);
        Attachment attachment = stagedOverBothPortals(request);
        fabrics.lostPastCtrlLossTmo("127.0.0.2:4420");
        fabrics.reachable("127.0.0.2:4420", false);
        fabrics.unreachableTimesOut().failedConnectsTake(NvmePathRepair.FAILED_AT_ONCE.plusSeconds(1));

        assertTrue(repairs().repair(request, attachment, Optional.empty()).waiting().orElseThrow()
                .endsWith("(not tried again for 5 s)"));
        clock.advance(Duration.ofSeconds(5));
        assertTrue(repairs().repair(request, attachment, Optional.empty()).waiting().orElseThrow()
                .endsWith("(not tried again for 10 s)"));
    }

    @Test
    void aVolumeWhoseDiskWentWithItsLastControllerWaitsForItsRestage() throws Exception {
        AttachRequest request = request("vol-1", NS1);
        Attachment attachment = stagedOverBothPortals(request);
        fabrics.lostPastCtrlLossTmo("127.0.0.1:4420");
        fabrics.lostPastCtrlLossTmo("127.0.0.2:4420");

        RepairedPaths repair = repairs().repair(request, attachment, Optional.empty());

        assertTrue(repair.waiting().orElseThrow().contains("is gone with its last controller"), repair.toString());
        assertEquals(2, fabrics.connects().size(), "no connect would find the same disk again");
    }

    @Test
    void anAuthenticatedVolumeIsNotReconnectedWithoutItsKeys() throws Exception {
        fabrics.authenticating();
        AttachRequest request = request("vol-1", NS1, new Secrets(Map.of("dhchap_secret", SECRET)));
        Attachment attachment = stagedOverBothPortals(request);
        AttachRequest recordedRequest = request("vol-1", NS1); // the record keeps no secret
        fabrics.lostPastCtrlLossTmo("127.0.0.2:4420");

        RepairedPaths repair = repairs().repair(recordedRequest, attachment, Optional.empty());

        assertTrue(repair.waiting().orElseThrow().contains("DH-HMAC-CHAP"), repair.toString());
        assertEquals(2, fabrics.connects().size());
    }
}
