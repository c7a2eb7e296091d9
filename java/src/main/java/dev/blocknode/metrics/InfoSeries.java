package dev.blocknode.metrics;

import io.prometheus.metrics.core.metrics.Info;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * An info family ({@code name_info{labels} 1}, the Prometheus convention for facts carried in labels), whose rows
 * are replaced as the facts change. Registered with the Prometheus registry itself: Micrometer strips the
 * reserved {@code _info} suffix from its own meters' names.
 */
public final class InfoSeries {

    private final Info info;
    private final Set<List<String>> rows = new HashSet<>();

    private InfoSeries(Info info) {
        this.info = info;
    }

    /** @param name ends in {@code _info} */
    public static InfoSeries register(PrometheusRegistry registry, String name, String help, String... labelNames) {
        if (!name.endsWith("_info")) {
            throw new IllegalArgumentException("an info series' name ends in _info: " + name);
        }
        return new InfoSeries(Info.builder().name(name).help(help).labelNames(labelNames).register(registry));
    }

    /** From now on exactly these rows, each one label value per label name, in the registered order. */
    public synchronized void replace(Set<List<String>> current) {
        for (List<String> gone : List.copyOf(rows)) {
            if (!current.contains(gone)) {
                info.remove(gone.toArray(String[]::new));
                rows.remove(gone);
            }
        }
        for (List<String> row : current) {
            if (rows.add(row)) {
                info.addLabelValues(row.toArray(String[]::new));
            }
        }
    }
}
