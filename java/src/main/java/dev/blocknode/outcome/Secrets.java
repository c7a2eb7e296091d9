package dev.blocknode.outcome;

import java.util.Map;
import java.util.Optional;

/**
 * Secrets from a request. Kept behind this type so that they cannot reach a log by accident: toString
 * names the keys only, never a value.
 */
public final class Secrets {

    public static final Secrets NONE = new Secrets(Map.of());

    private final Map<String, String> values;

    public Secrets(Map<String, String> values) {
        this.values = Map.copyOf(values);
    }

    public Optional<String> get(String key) {
        return Optional.ofNullable(values.get(key));
    }

    public boolean isEmpty() {
        return values.isEmpty();
    }

    @Override
    public String toString() {
        return "Secrets" + values.keySet() + " (values redacted)";
    }
}
