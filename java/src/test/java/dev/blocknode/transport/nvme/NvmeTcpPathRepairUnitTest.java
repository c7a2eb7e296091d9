package dev.blocknode.transport.nvme;

import dev.blocknode.outcome.Secrets;
import dev.blocknode.transport.AttachRequest;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.PathRepair;
import dev.blocknode.transport.PathReport;
import dev.blocknode.transport.RepairedPaths;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The NVMe/TCP transport's path repair: a controller the kernel deleted after ctrl_loss_tmo connected again (with
 * the host ID the volume was staged with, for a fenced one), per-portal back-off of refused connects, and what it
 * leaves alone (a controller the kernel reconnects, a volume whose disk is gone, one whose keys are not recorded).
 */
class NvmeTcpPathRepairUnitTest extends FabricatedNvmeNode {

    /** What the repair loop asks of the transport. */
    private PathRepair repairs() {
        return transport.pathRepair().orElseThrow();
    }

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
