package dev.blocknode.transport.nvme;

import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.Attachment;
import dev.blocknode.transport.FenceKey;
import dev.blocknode.transport.Fencing;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The NVMe/TCP transport's fencing: NVMe reservations held through the multipath head, and refused where they would
 * not cover this node (no host ID, a controller of another host, a head that is another disk now).
 */
class NvmeTcpFencingUnitTest extends FabricatedNvmeNode {

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
}
