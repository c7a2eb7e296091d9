package dev.blocknode.csi;

import dev.blocknode.logging.Printable;
import dev.blocknode.outcome.VolumeException;

import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * Bounds and character rules for the caller's strings, checked before anything else reads them. A field
 * that breaks one is INVALID_ARGUMENT naming the field and the rule, never quoting the value: the value is
 * what is hostile. The limits are docs/guarantees.md's ("Input").
 */
final class RequestFields {

    /** The CSI spec's size limit for a string field ("fields SHALL NOT exceed" 128 bytes). */
    static final int MAX_ID_BYTES = 128;
    /** The spec's limit for NodeGetInfo's node_id, which is what a controller call names a node by. */
    static final int MAX_NODE_ID_BYTES = 256;
    /** PATH_MAX, the longest path the kernel takes. */
    static final int MAX_PATH_BYTES = 4096;
    /**
     * For volume_context and publish_context (and a controller call's parameters), each: the CSI spec's limit for
     * a map ("fields SHALL NOT exceed" 4 KiB, keys and values), the one that other node plugins and CSI
     * middleware enforce (dell/csm#2012: a 5 KiB publish_context refused at the node). Refused here, at the first
     * call that carries it, so that a controller that outgrows it learns which field and by how much, not from
     * another component later; docs/integration.md says what blocknode's own keys cost of it.
     */
    static final int MAX_CONTEXT_BYTES = 4096;
    /**
     * For secrets: sixteen times the spec's map limit. kubelet passes every key of the Secret a PV names, which
     * may hold more than the plugin reads (a certificate beside a CHAP pair), and a secret is never recorded.
     */
    static final int MAX_SECRETS_BYTES = 64 * 1024;
    static final int MAX_MAP_ENTRIES = 256;

    private RequestFields() {
    }

    /** A required string field: INVALID_ARGUMENT naming it when empty or holding a control character. */
    static String required(String field, String value) throws VolumeException {
        if (value.isEmpty()) {
            throw VolumeException.invalid(field + " is required");
        }
        return printable(field, value);
    }

    /** volume_id: required, printable, and at most the spec's 128 bytes (it is in every log line and record). */
    static String volumeId(String value) throws VolumeException {
        required("volume_id", value);
        return atMost("volume_id", value, MAX_ID_BYTES);
    }

    /** node_id: required, printable, and at most the 256 bytes the spec allows NodeGetInfo's answer. */
    static String nodeId(String value) throws VolumeException {
        required("node_id", value);
        return atMost("node_id", value, MAX_NODE_ID_BYTES);
    }

    /** A required path: printable and at most PATH_MAX; where it may lead is the volume layer's check. */
    static String path(String field, String value) throws VolumeException {
        required(field, value);
        return atMost(field, value, MAX_PATH_BYTES);
    }

    /** An optional path: empty, or as {@link #path}. */
    static String optionalPath(String field, String value) throws VolumeException {
        return value.isEmpty() ? value : path(field, value);
    }

    /**
     * volume_context or publish_context: bounded, and neither keys nor values hold a control character
     * (the transports read paths, names and numbers from them; none has one, and they reach logs and records).
     */
    static Map<String, String> context(String field, Map<String, String> context) throws VolumeException {
        bounded(field, context, MAX_CONTEXT_BYTES, " (the CSI spec's limit for a map, 4 KiB)");
        for (Map.Entry<String, String> entry : context.entrySet()) {
            if (Printable.hasUnprintable(entry.getKey())) {
                throw VolumeException.invalid(field + " has a key holding a control or formatting character");
            }
            if (Printable.hasUnprintable(entry.getValue())) {
                throw VolumeException.invalid(field + "." + Printable.bounded(entry.getKey(), MAX_ID_BYTES)
                        + " holds a control or formatting character");
            }
        }
        return context;
    }

    /**
     * secrets: bounded, and printable keys. Values are not looked at here: a secret may be anything, and the
     * transport that uses one checks it for where it goes (see ChapCredentials).
     */
    static Map<String, String> secrets(String field, Map<String, String> secrets) throws VolumeException {
        bounded(field, secrets, MAX_SECRETS_BYTES, "");
        for (String key : secrets.keySet()) {
            if (Printable.hasUnprintable(key)) {
                throw VolumeException.invalid(field + " has a key holding a control or formatting character");
            }
        }
        return secrets;
    }

    private static String printable(String field, String value) throws VolumeException {
        if (Printable.hasUnprintable(value)) {
            throw VolumeException.invalid(field + " holds a control or formatting character (NUL, newline...)");
        }
        return value;
    }

    private static String atMost(String field, String value, int maxBytes) throws VolumeException {
        // A UTF-8 byte count is at least the char count, at most three times it: count only in between.
        if (value.length() * 3 > maxBytes && utf8Length(value) > maxBytes) {
            throw VolumeException.invalid(field + " is " + utf8Length(value) + " bytes long; at most " + maxBytes);
        }
        return value;
    }

    private static void bounded(String field, Map<String, String> map, int maxBytes, String why)
            throws VolumeException {
        if (map.size() > MAX_MAP_ENTRIES) {
            throw VolumeException.invalid(field + " has " + map.size() + " entries; at most " + MAX_MAP_ENTRIES);
        }
        long bytes = 0;
        for (Map.Entry<String, String> entry : map.entrySet()) {
            bytes += utf8Length(entry.getKey()) + utf8Length(entry.getValue());
        }
        if (bytes > maxBytes) {
            throw VolumeException.invalid(field + " holds " + bytes + " bytes of keys and values; at most "
                    + maxBytes + why);
        }
    }

    private static int utf8Length(String text) {
        return text.getBytes(StandardCharsets.UTF_8).length;
    }
}
