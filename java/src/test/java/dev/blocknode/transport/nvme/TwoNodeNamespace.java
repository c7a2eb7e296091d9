package dev.blocknode.transport.nvme;

import dev.blocknode.nvme.reservation.NvmeReservations;
import dev.blocknode.testing.FakeNvmeNamespace;
import dev.blocknode.transport.FenceKey;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;

import static dev.blocknode.nvme.reservation.ReservationType.WRITE_EXCLUSIVE_REGISTRANTS_ONLY;

/**
 * One in-memory namespace that two nodes reach, each through its own head device (FakeNvmeNamespace, which decodes
 * the commands by nvmet's rules), and the reservation commands over it: what the fencing steps' tests share.
 */
final class TwoNodeNamespace {

    static final Path HEAD_A = Path.of("/dev/nvme0n1");
    static final Path HEAD_B = Path.of("/dev/nvme1n1");
    static final FenceKey A = FenceKey.forNode("node-a").withGeneration(1);
    static final FenceKey B = FenceKey.forNode("node-b").withGeneration(1);

    final FakeNvmeNamespace namespace = new FakeNvmeNamespace(1).device(HEAD_A, "nodeA").device(HEAD_B, "nodeB");
    final NvmeReservations reservations = new NvmeReservations(namespace, namespace.check(), Duration.ofSeconds(10));

    /** {@code key} registered through {@code head} and holding the reservation. */
    void holds(Path head, FenceKey key) throws IOException {
        reservations.register(head, key.value());
        reservations.acquire(head, key.value(), WRITE_EXCLUSIVE_REGISTRANTS_ONLY);
    }
}
