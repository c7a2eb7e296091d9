package dev.blocknode.transport.nvme;

import dev.blocknode.logging.LogCapture;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.QueryOnlyMounter;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.PathReport;
import dev.blocknode.transport.StagedVolumes;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The NVMe/TCP transport's attach and detach: a controller per portal, the multipath head handed out, controllers
 * shared between volumes and deleted with the last, identity checks, authentication, growing, and path health.
 */
class NvmeTcpTransportUnitTest extends FabricatedNvmeNode {

    /** The record of a volume whose attach is under way: no device yet. */
    private void attaching(AttachRequest request) {
        records.add(new StagedVolumes.StagedVolume(request.volumeId(), Optional.empty(), request, Map.of()));
    }

    /** The controllers deleted through sysfs so far. */
    private List<String> deletes() {
        return sysfs.writeLog().stream().filter(w -> w.endsWith("delete_controller=1")).toList();
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
}
