package dev.blocknode.csi;

import dev.blocknode.outcome.VolumeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Ids, paths and maps: the field is named, the limit is said, the hostile value is never quoted. */
class RequestFieldsUnitTest {

    private static String refused(org.junit.jupiter.api.function.Executable check) {
        VolumeException e = assertThrows(VolumeException.class, check);
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        return e.getMessage();
    }

    @ParameterizedTest
    @ValueSource(strings = {"v\n2026-01-01T00:00:00.000Z SEVERE forged", "nul\0byte", "cr\r", "esc\u001b[2J",
            "c1\u0085", "ls\u2028", "bidi\u202e"})
    void controlCharactersInIdsAndPathsAreRefusedWithoutQuotingThem(String value) {
        String message = refused(() -> RequestFields.volumeId(value));
        assertTrue(message.startsWith("volume_id holds a control"), message);
        assertFalse(message.contains(value), message);
        message = refused(() -> RequestFields.path("target_path", "/var/lib/kubelet/" + value));
        assertTrue(message.startsWith("target_path holds a control"), message);
        message = refused(() -> RequestFields.optionalPath("staging_target_path", value));
        assertTrue(message.startsWith("staging_target_path"), message);
    }

    @Test
    void volumeIdIsAtMostTheSpecs128Bytes() throws Exception {
        assertEquals("a".repeat(128), RequestFields.volumeId("a".repeat(128)));
        String message = refused(() -> RequestFields.volumeId("a".repeat(129)));
        assertEquals("volume_id is 129 bytes long; at most 128", message);
        // Bytes, not characters: 43 three-byte characters are 129 bytes.
        refused(() -> RequestFields.volumeId("卷".repeat(43)));
        assertEquals("卷".repeat(42), RequestFields.volumeId("卷".repeat(42)));
    }

    @Test
    void pathsAreAtMostPathMax() throws Exception {
        String longest = "/" + "d".repeat(RequestFields.MAX_PATH_BYTES - 1);
        assertEquals(longest, RequestFields.path("target_path", longest));
        String message = refused(() -> RequestFields.path("target_path", longest + "d"));
        assertEquals("target_path is 4097 bytes long; at most 4096", message);
        assertEquals("", RequestFields.optionalPath("staging_target_path", ""));
        assertEquals("target_path is required", refused(() -> RequestFields.path("target_path", "")));
    }

    /** A 3.3 MiB volume_context of 20,000 keys was accepted and persisted. */
    @Test
    void contextsAreBoundedInEntriesAndBytes() throws Exception {
        Map<String, String> many = new HashMap<>();
        for (int i = 0; i < 20_000; i++) {
            many.put("key" + i, "v".repeat(160));
        }
        String message = refused(() -> RequestFields.context("volume_context", many));
        assertEquals("volume_context has 20000 entries; at most 256", message);

        Map<String, String> big = Map.of("devicePath", "/dev/loop0", "note", "n".repeat(64 * 1024));
        message = refused(() -> RequestFields.context("publish_context", big));
        assertTrue(message.startsWith("publish_context holds 65560 bytes of keys and values; at most 4096"), message);
        message = refused(() -> RequestFields.secrets("secrets", big));
        assertEquals("secrets holds 65560 bytes of keys and values; at most 65536", message);

        Map<String, String> ordinary = Map.of("devicePath", "/dev/loop0", "wwid", "naa.600");
        assertEquals(ordinary, RequestFields.context("volume_context", ordinary));
    }

    /**
     * The CSI spec's 4 KiB for a map, keys and values counted in UTF-8 bytes (dell/csm#2012: a 5 KiB publish_context
     * that a node refused): the refusal names the field, its size and the limit. Secrets keep a larger bound.
     */
    @Test
    void contextsAreAtMostTheSpecs4KiB() throws Exception {
        Map<String, String> full = Map.of("targetPortal", "10.0.0.1:3260", "note", "n".repeat(4096 - 29));
        assertEquals(4096, bytes(full));
        assertEquals(full, RequestFields.context("publish_context", full));
        assertEquals(full, RequestFields.context("volume_context", full));

        Map<String, String> over = Map.of("targetPortal", "10.0.0.1:3260", "note", "卷" + "n".repeat(4096 - 30));
        assertEquals(4098, bytes(over), "a three-byte character counts three");
        assertEquals("publish_context holds 4098 bytes of keys and values; at most 4096 (the CSI spec's limit for"
                + " a map, 4 KiB)", refused(() -> RequestFields.context("publish_context", over)));
        assertTrue(refused(() -> RequestFields.context("volume_context", over))
                .startsWith("volume_context holds 4098"));

        Map<String, String> certificate = Map.of("tls.crt", "c".repeat(6000));
        assertEquals(certificate, RequestFields.secrets("secrets", certificate));
    }

    /**
     * docs/integration.md's budget: with every other iSCSI key at its longest, {@code portals} still holds 148 IPv4
     * portals of the longest form (21 bytes each with the comma); the 149th is over.
     */
    @Test
    void theIntegrationPagesLongestIscsiContextHolds148Portals() throws Exception {
        Map<String, String> longest = longestIscsiContext(148);
        assertTrue(bytes(longest) <= RequestFields.MAX_CONTEXT_BYTES, bytes(longest) + " bytes");
        assertEquals(longest, RequestFields.context("publish_context", longest));
        assertTrue(refused(() -> RequestFields.context("publish_context", longestIscsiContext(149)))
                .startsWith("publish_context holds 4110 bytes"));
    }

    /** Every key an iSCSI volume may have, each value as long as its grammar allows, and {@code n} portals. */
    private static Map<String, String> longestIscsiContext(int portals) {
        Map<String, String> context = new HashMap<>();
        context.put("transport", "iscsi");
        context.put("targetPortal", "255.255.255.255:3260");
        context.put("iqn", "iqn.2001-04.com.example:" + "t".repeat(223 - 24));
        context.put("lun", "4294967295");
        context.put("wwid", "3" + "6".repeat(32));
        context.put("iface", "i".repeat(64));
        context.put("replacementTimeout", "3600");
        context.put("fencing", "required");
        context.put("fsck", "preen");
        context.put("encryption", "luks2");
        context.put("mkfsOptions", "m".repeat(512));
        context.put("portals", String.join(",", Collections.nCopies(portals, "255.255.255.255:3260")));
        return context;
    }

    private static int bytes(Map<String, String> map) {
        return map.entrySet().stream()
                .mapToInt(e -> (e.getKey() + e.getValue()).getBytes(StandardCharsets.UTF_8).length).sum();
    }

    /** A NUL in devicePath reached Path.of and came back INTERNAL with a stack trace. */
    @Test
    void contextKeysAndValuesMustBePrintable() {
        String message = refused(() -> RequestFields.context("volume_context", Map.of("devicePath", "/dev/x\0")));
        assertEquals("volume_context.devicePath holds a control or formatting character", message);
        message = refused(() -> RequestFields.context("volume_context", Map.of("device\nPath", "/dev/x")));
        assertEquals("volume_context has a key holding a control or formatting character", message);
    }

    @Test
    void secretValuesAreNotJudgedButKeysAre() throws Exception {
        Map<String, String> multiline = Map.of("tls.key", "-----BEGIN KEY-----\nabc\n-----END KEY-----\n");
        assertEquals(multiline, RequestFields.secrets("secrets", multiline));
        String message = refused(() -> RequestFields.secrets("secrets", Map.of("user\n", "x")));
        assertEquals("secrets has a key holding a control or formatting character", message);
    }
}
