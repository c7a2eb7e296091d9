package dev.blocknode.transport;

import dev.blocknode.os.HostPaths;
import dev.blocknode.os.host.Host;
import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.local.LocalTransport;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TransportsUnitTest {

    /** A transport that only has a name and identifying keys; selection never attaches anything. */
    private record FakeTransport(String name, Set<String> identifyingKeys) implements Transport {

        @Override
        public AttachPlan validate(AttachRequest request) {
            throw new AssertionError("select must not validate");
        }

        @Override
        public Attachment attach(AttachPlan plan) {
            throw new AssertionError("select must not attach");
        }

        @Override
        public void detach(Attachment attachment) {
            throw new AssertionError("select must not detach");
        }

        @Override
        public void abandon(AttachRequest request) {
            throw new AssertionError("select must not abandon");
        }
    }

    private final Transport local = new FakeTransport("local", Set.of("devicePath"));
    private final Transport iscsi = new FakeTransport("iscsi", Set.of("targetPortal", "iqn"));
    private final Transport fc = new FakeTransport("fc", Set.of("targetWWNs", "wwids"));
    private final Transports transports = new Transports(List.of(local, iscsi, fc));

    private static AttachRequest request(Map<String, String> volumeContext) {
        return request(volumeContext, Map.of());
    }

    private static AttachRequest request(Map<String, String> volumeContext, Map<String, String> publishContext) {
        return new AttachRequest("vol-1", volumeContext, publishContext, Secrets.NONE);
    }

    private VolumeException refused(AttachRequest request) {
        VolumeException e = assertThrows(VolumeException.class, () -> transports.select(request));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        return e;
    }

    @Test
    void namedFindsByName() {
        assertEquals(Optional.of(iscsi), transports.named("iscsi"));
        assertEquals(Optional.empty(), transports.named("nvme"));
        assertEquals(Optional.empty(), transports.named("ISCSI"));
    }

    @Test
    void explicitTransportKeyPicksByName() throws VolumeException {
        assertSame(fc, transports.select(request(Map.of("transport", "fc"))));
        assertSame(local, transports.select(request(Map.of("transport", "local"))));
    }

    @Test
    void explicitTransportWinsOverIdentifyingKeys() throws VolumeException {
        // devicePath would infer local, iqn would infer iscsi: the explicit name decides.
        assertSame(fc, transports.select(request(Map.of("transport", "fc", "devicePath", "/dev/sdb",
                "iqn", "iqn.2024-01.dev.example:t1"))));
    }

    @Test
    void unknownExplicitTransportListsTheKnownOnes() {
        VolumeException e = refused(request(Map.of("transport", "nvme", "devicePath", "/dev/nvme0n1")));
        assertTrue(e.getMessage().contains("\"nvme\""), e.getMessage());
        assertTrue(e.getMessage().contains("volume_context.transport"), e.getMessage());
        assertTrue(e.getMessage().contains("[local, iscsi, fc]"), e.getMessage());
    }

    @Test
    void inferenceFromOneIdentifyingKey() throws VolumeException {
        assertSame(local, transports.select(request(Map.of("devicePath", "/dev/sdb"))));
        assertSame(iscsi, transports.select(request(Map.of("iqn", "iqn.2024-01.dev.example:t1"))));
        assertSame(iscsi, transports.select(request(Map.of("targetPortal", "10.0.0.1:3260"))));
        assertSame(fc, transports.select(request(Map.of("wwids", "3600a0b80001"))));
    }

    @Test
    void inferenceAlsoSeesPublishContext() throws VolumeException {
        assertSame(fc, transports.select(request(Map.of("unrelated", "x"), Map.of("targetWWNs", "5000"))));
    }

    @Test
    void inferenceWithSeveralKeysOfOneTransport() throws VolumeException {
        assertSame(iscsi, transports.select(request(Map.of("iqn", "iqn.x", "targetPortal", "10.0.0.1",
                "lun", "0"))));
    }

    @Test
    void noMatchingTransportIsInvalidAndNamesTheOptions() {
        VolumeException e = refused(request(Map.of("size", "10Gi")));
        assertTrue(e.getMessage().contains("names no device"), e.getMessage());
        assertTrue(e.getMessage().contains("\"transport\""), e.getMessage());
        assertTrue(e.getMessage().contains("local [devicePath]"), e.getMessage());
        assertTrue(e.getMessage().contains("fc"), e.getMessage());
    }

    @Test
    void emptyContextIsInvalid() {
        refused(request(Map.of()));
    }

    @Test
    void blankIdentifyingKeysDoNotCount() {
        refused(request(Map.of("devicePath", "  ", "iqn", "")));
    }

    @Test
    void severalMatchingTransportsIsInvalidAndNamesThem() {
        VolumeException e = refused(request(Map.of("devicePath", "/dev/sdb", "wwids", "3600")));
        assertTrue(e.getMessage().contains("several"), e.getMessage());
        assertTrue(e.getMessage().contains("local"), e.getMessage());
        assertTrue(e.getMessage().contains("fc"), e.getMessage());
        assertTrue(e.getMessage().contains("\"transport\""), e.getMessage());
    }

    @Test
    void severalMatchingAcrossVolumeAndPublishContexts() {
        refused(request(Map.of("devicePath", "/dev/sdb"), Map.of("iqn", "iqn.x")));
    }

    @Test
    void noTransportsAtAll() {
        Transports none = new Transports(List.of());
        VolumeException e = assertThrows(VolumeException.class,
                () -> none.select(request(Map.of("devicePath", "/dev/sdb"))));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        VolumeException named = assertThrows(VolumeException.class,
                () -> none.select(request(Map.of("transport", "local"))));
        assertTrue(named.getMessage().contains("known: []"), named.getMessage());
    }

    @Test
    void theFallbackIsTheTransportThatHoldsUnrecognizedDevices() {
        assertEquals(Optional.empty(), transports.fallback(), "no fake transport holds unrecognized devices");
        Transport real = new LocalTransport(new Host(HostPaths.real(), null, null, null));
        assertSame(real, new Transports(List.of(iscsi, real, fc)).fallback().orElseThrow());
    }

    @Test
    void laterTransportWithTheSameNameReplacesTheEarlier() throws VolumeException {
        Transport other = new FakeTransport("local", Set.of("somethingElse"));
        Transports replaced = new Transports(List.of(local, other));
        assertSame(other, replaced.select(request(Map.of("transport", "local"))));
        assertSame(other, replaced.select(request(Map.of("somethingElse", "x"))));
    }

    @Test
    void blankExplicitTransportCountsAsAbsent() throws VolumeException {
        assertSame(local, transports.select(request(Map.of("transport", "", "devicePath", "/dev/sdb"))));
        assertSame(local, transports.select(request(Map.of("transport", " local "))));
    }
}
