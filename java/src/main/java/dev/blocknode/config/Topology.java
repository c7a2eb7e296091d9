package dev.blocknode.config;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The topology segments of {@code --topology KEY=VALUE[,KEY=VALUE...]}, which NodeGetInfo reports as
 * accessible_topology. kubelet copies each one onto the Node as a label (and its key into CSINode's
 * topologyKeys), so a segment must be a valid Kubernetes label as well as a valid CSI segment: a key is an
 * optional DNS-subdomain prefix and a slash, then a name of at most 63 characters, alphanumerics at both ends
 * with dashes, underscores and dots between; a value is such a name too, and never empty (CSI wants at least one
 * character, where a label value may be empty). Keys under kubernetes.io or k8s.io are refused: the NodeRestriction
 * admission plugin stops kubelet from setting most of them, so the node would never register.
 */
public final class Topology {

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?");
    private static final Pattern DNS_LABEL = Pattern.compile("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");

    private Topology() {
    }

    /** The segments in the order given; empty for an empty or blank flag. */
    public static Map<String, String> parse(String flag, String value) {
        Map<String, String> segments = new LinkedHashMap<>();
        if (value == null || value.isBlank()) {
            return Map.of();
        }
        for (String pair : value.split(",", -1)) {
            int eq = pair.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException("--" + flag + " takes KEY=VALUE pairs separated by commas; one"
                        + " pair has no \"=\"");
            }
            String key = pair.substring(0, eq).strip();
            String segment = pair.substring(eq + 1).strip();
            checkKey(flag, key);
            if (!NAME.matcher(segment).matches()) {
                throw new IllegalArgumentException("--" + flag + ": the value of key " + key + " is not a valid"
                        + " topology segment (and node label value): 1 to 63 characters, alphanumerics at both"
                        + " ends, dashes, underscores and dots between");
            }
            if (segments.putIfAbsent(key, segment) != null) {
                throw new IllegalArgumentException("--" + flag + " names key " + key + " twice");
            }
        }
        return Collections.unmodifiableMap(segments);
    }

    private static void checkKey(String flag, String key) {
        int slash = key.indexOf('/');
        String prefix = slash < 0 ? "" : key.substring(0, slash);
        String name = slash < 0 ? key : key.substring(slash + 1);
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("--" + flag + ": a key's name (after any prefix and \"/\") must be 1"
                    + " to 63 characters, alphanumerics at both ends, dashes, underscores and dots between; "
                    + "\"" + key + "\" is not");
        }
        if (slash >= 0 && !isDnsSubdomain(prefix)) {
            throw new IllegalArgumentException("--" + flag + ": the prefix of key " + key + " must be a DNS"
                    + " subdomain: at most 253 characters, dot-separated lowercase labels of alphanumerics and"
                    + " dashes");
        }
        String lower = prefix.toLowerCase(Locale.ROOT);
        if (lower.equals("kubernetes.io") || lower.endsWith(".kubernetes.io") || lower.equals("k8s.io")
                || lower.endsWith(".k8s.io")) {
            throw new IllegalArgumentException("--" + flag + ": key " + key + " is under " + prefix
                    + ", which Kubernetes reserves (NodeRestriction refuses kubelet most such node labels); use"
                    + " a prefix of your own, such as the driver name's");
        }
    }

    private static boolean isDnsSubdomain(String prefix) {
        if (prefix.isEmpty() || prefix.length() > 253) {
            return false;
        }
        for (String label : prefix.split("\\.", -1)) {
            if (!DNS_LABEL.matcher(label).matches()) {
                return false;
            }
        }
        return true;
    }
}
