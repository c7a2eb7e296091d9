package dev.blocknode.transport.nvme;

import dev.blocknode.outcome.Secrets;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.transport.AttachRequest;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The nvme-tcp volume context, key by key: what is accepted, and refusals that name the key, never the value. */
class NvmeVolumeSpecUnitTest {

    private static final String NQN = "nqn.2024-01.dev.blocknode:array1";
    private static final String NGUID = "0b5e1f8a-3c2d-4e6f-8a9b-1c2d3e4f5a6b";

    private static NvmeVolumeSpec spec(String... pairs) throws VolumeException {
        Map<String, String> context = new HashMap<>(Map.of("subsysNQN", NQN, "nvmePortals", "10.0.0.5",
                "namespaceNGUID", NGUID));
        for (int i = 0; i < pairs.length; i += 2) {
            if (pairs[i + 1] == null) {
                context.remove(pairs[i]);
            } else {
                context.put(pairs[i], pairs[i + 1]);
            }
        }
        return NvmeVolumeSpec.from(new AttachRequest("vol", context, Map.of(), Secrets.NONE));
    }

    private static String refusal(String... pairs) {
        VolumeException e = assertThrows(VolumeException.class, () -> spec(pairs));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        return e.getMessage();
    }

    @Test
    void portalsTakeEveryIpv4AndIpv6Spelling() throws Exception {
        NvmeVolumeSpec spec = spec("nvmePortals",
                "10.0.0.5, 10.0.0.6:4421,[fd00::5]:4422,[fd00::6], fd00::7, [FD00:0:0:0:0:0:0:5]:4422");

        assertEquals(List.of("10.0.0.5:4420", "10.0.0.6:4421", "[fd00:0:0:0:0:0:0:5]:4422",
                "[fd00:0:0:0:0:0:0:6]:4420", "[fd00:0:0:0:0:0:0:7]:4420"),
                spec.portals().stream().map(NvmePortal::toString).toList(), "one portal per address and port");
        assertEquals("fd00:0:0:0:0:0:0:5", spec.portals().get(2).traddr(), "no brackets in the fabrics options");
    }

    @Test
    void portalListsMayBeJsonStyle() throws Exception {
        assertEquals(2, spec("nvmePortals", "[\"10.0.0.5:4420\", \"[fd00::5]:4420\"]").portals().size());
        assertEquals(2, spec("nvmePortals", "[10.0.0.5:4420, 10.0.0.6]").portals().size());
        assertEquals(1, spec("nvmePortals", "[fd00::5]").portals().size());
    }

    @Test
    void aPortalMustBeAnIpLiteralWithAPortInRange() {
        for (String bad : List.of("array.example.com:4420", "10.0.0.5:0", "10.0.0.5:x", "[fd00::5", "10.0.0.256",
                "[10.0.0.5]:4420", "fe80::1%eth0", "10.0.0.5:")) {
            String message = refusal("nvmePortals", bad);
            assertTrue(message.startsWith("volume_context.nvmePortals "), message);
            assertFalse(message.contains(bad), "the value is not echoed: " + message);
        }
    }

    @Test
    void identityIsGivenInAnySysfsSpellingAndOneIsRequired() throws Exception {
        NamespaceIdentity id = spec("namespaceNGUID", "eui.0B5E1F8A3C2D4E6F8A9B1C2D3E4F5A6B",
                "namespaceEUI64", "01 02 03 04 05 06 07 08", "namespaceUUID", "uuid." + NGUID,
                "namespaceID", "3").namespace();

        assertEquals(Optional.of("0b5e1f8a3c2d4e6f8a9b1c2d3e4f5a6b"), id.nguid());
        assertEquals(Optional.of("0102030405060708"), id.eui64());
        assertEquals(Optional.of("0b5e1f8a3c2d4e6f8a9b1c2d3e4f5a6b"), id.uuid());
        assertEquals(OptionalLong.of(3), id.nsid());
        assertTrue(refusal("namespaceNGUID", null).contains("no namespace identity"));
        assertTrue(refusal("namespaceNGUID", "00000000-0000-0000-0000-000000000000")
                .startsWith("volume_context.namespaceNGUID "));
        assertTrue(refusal("namespaceEUI64", "0102").startsWith("volume_context.namespaceEUI64 "));
        assertTrue(refusal("namespaceID", "0").startsWith("volume_context.namespaceID "));
    }

    @Test
    void anNqnCannotSmuggleAnotherFabricsOption() {
        String injected = NQN + ",hostnqn=nqn.2024-01.evil:x";
        String message = refusal("subsysNQN", injected);

        assertTrue(message.startsWith("volume_context.subsysNQN is not an NVMe qualified name"), message);
        assertFalse(message.contains("evil"), message);
        assertTrue(refusal("hostNQN", "nqn.2024-01.dev.blocknode:a b").startsWith("volume_context.hostNQN "));
        assertTrue(refusal("subsysNQN", "nqn.2024-01.dev:" + "x".repeat(220)).startsWith("volume_context.subsysNQN "));
        assertTrue(refusal("hostID", "not-a-uuid").startsWith("volume_context.hostID "));
        assertTrue(refusal("subsysNQN", null).contains("required by the nvme-tcp transport"));
    }

    @Test
    void dhchapKeysMustHaveTheirFormAndAControllerKeyNeedsAHostKey() throws Exception {
        String key = "DHHC-1:01:c2VjcmV0LXZhbHVl:";
        assertTrue(DhchapKeys.from(new Secrets(Map.of("dhchap_secret", key))).isPresent());
        assertEquals(Optional.empty(), DhchapKeys.from(Secrets.NONE));

        for (Map<String, String> bad : List.of(Map.of("dhchap_secret", "plain-password"),
                Map.of("dhchap_secret", key + ",nqn=x"), Map.of("dhchap_ctrl_secret", key))) {
            VolumeException e = assertThrows(VolumeException.class, () -> DhchapKeys.from(new Secrets(bad)));
            assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
            assertFalse(e.getMessage().contains("c2VjcmV0") || e.getMessage().contains("plain-password"));
        }
        assertFalse(DhchapKeys.from(new Secrets(Map.of("dhchap_secret", key))).orElseThrow().toString()
                .contains("c2VjcmV0"));
    }
}
