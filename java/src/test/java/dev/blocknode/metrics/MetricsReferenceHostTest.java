package dev.blocknode.metrics;

import dev.blocknode.doctor.NodeIdentityInfo;
import dev.blocknode.os.DeviceNumber;
import dev.blocknode.os.block.BlockDevices;
import dev.blocknode.os.host.Host;
import dev.blocknode.scsi.ScsiAddress;
import dev.blocknode.state.RecordStore;
import dev.blocknode.state.v1.DeviceRecord;
import dev.blocknode.state.v1.StagingRecord;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.GeneratedDocs;
import dev.blocknode.testing.ManualClock;
import dev.blocknode.testing.PluginHarness;
import dev.blocknode.testing.QueryOnlyMounter;
import dev.blocknode.testing.RecordingBlockDevices;
import dev.blocknode.testing.ScriptedCommandRunner;
import dev.blocknode.transport.Transports;
import dev.blocknode.transport.fc.FcTransport;
import dev.blocknode.transport.san.LunAttacher;
import dev.blocknode.volume.read.VolumeDeviceInfo;
import dev.blocknode.volume.read.VolumePathGauges;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/reference/metrics.md is rendered from a real scrape of the plugin's /metrics: the real plugin runs a
 * lifecycle on a loop volume (RPC timers, phases, an error), and a staged SAN volume's path gauge is added over
 * a fabricated sysfs (the one series that needs SAN paths). Every series the main sources name must be in the
 * scrape, so a new metric cannot be missing from the page. Fails when the page is stale; {@code make docs}
 * (BLOCKNODE_WRITE_DOCS=1) rewrites it.
 */
@Tag("host")
class MetricsReferenceHostTest {

    private static final String WWID = "360014052e3c1d6a5b4c34b58a1f2e3d4";

    @TempDir
    Path temp;

    @Test
    void metricsPageIsCurrent() throws Exception {
        String text;
        try (PluginHarness plugin = PluginHarness.startWithMetrics()) {
            MetricsScrapeHostTest.lifecycle(plugin);
            sanVolumePaths(plugin);
            // The doctor's checks at start run on a thread of their own: their series once they have ended.
            assertTrue(plugin.plugin().awaitDoctorAtStart(Duration.ofSeconds(60)), "the doctor's checks at start end");
            text = scrapeAfterACollection(plugin) + nodeIdentity() + volumeDevices();
        }
        Map<String, Family> families = families(text, "blocknode_");
        for (String name : namedInSources()) {
            assertTrue(families.keySet().stream().anyMatch(f -> f.startsWith(name)),
                    name + " is named in the sources but not in the scrape: make this test produce it");
        }
        Map<String, Family> process = new TreeMap<>(families(text, "process_"));
        process.putAll(families(text, "jvm_"));
        // Only the concurrent collectors (G1, ZGC: this test's JVM) time concurrent phases, and only once a
        // concurrent cycle ran; the image's serial collector has none. Left out so that the page is the same
        // wherever it is generated.
        process.keySet().removeIf(name -> name.startsWith("jvm_gc_concurrent_phase_time"));
        for (String needed : List.of("process_resident_memory_bytes", "jvm_gc_pause_seconds",
                "jvm_memory_used_bytes", "process_start_time_seconds")) {
            assertTrue(process.containsKey(needed), needed + " is not in the scrape");
        }
        GeneratedDocs.check("docs/reference/metrics.md", page(families, process, histogramBuckets(text, families)));
    }

    /**
     * The bucket boundaries of blocknode's histograms as the scrape shows them (the {@code le} values of each
     * one's first label set), one sentence for the histograms that share them.
     */
    private static String histogramBuckets(String text, Map<String, Family> families) {
        Map<List<String>, List<String>> byBuckets = new LinkedHashMap<>();
        Pattern le = Pattern.compile("le=\"([^\"]*)\"");
        for (Map.Entry<String, Family> e : families.entrySet()) {
            if (!e.getValue().type().equals("histogram")) {
                continue;
            }
            List<String> boundaries = new ArrayList<>();
            String first = null;
            for (String line : text.lines().filter(l -> l.startsWith(e.getKey() + "_bucket{")).toList()) {
                String labels = line.substring(0, line.indexOf('}')).replaceAll("le=\"[^\"]*\",?", "");
                first = first == null ? labels : first;
                Matcher m = le.matcher(line);
                if (labels.equals(first) && m.find()) {
                    boundaries.add(m.group(1).replaceAll("\\.0$", ""));
                }
            }
            byBuckets.computeIfAbsent(boundaries, b -> new ArrayList<>()).add("`" + e.getKey() + "`");
        }
        List<String> sentences = new ArrayList<>();
        byBuckets.forEach((boundaries, names) -> sentences.add(String.join(" and ", names) + " count in "
                + boundaries.size() + " buckets (`le`, in seconds): " + String.join(", ", boundaries) + "."));
        return String.join(" ", sentences);
    }

    /**
     * A scrape that has jvm_gc_pause_seconds: the GC timer's first sample comes from a collection's notification,
     * which the JVM delivers on a thread of its own some time after the collection; polled until it is there.
     */
    private static String scrapeAfterACollection(PluginHarness plugin) throws Exception {
        System.gc();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            String text = MetricsScrapeHostTest.scrape(plugin);
            if (text.contains("# TYPE jvm_gc_pause_seconds ") || System.nanoTime() > deadline) {
                return text;
            }
            LockSupport.parkNanos(Duration.ofMillis(50).toNanos()); // between polls of the condition above
        }
    }

    /**
     * The node's iSCSI, FC and NVMe names as the plugin's info series show them: the plugin above reads this
     * machine's /etc and /sys, which have none, so the same class reads a fabricated tree into a registry of its
     * own, whose exposition is added to the plugin's.
     */
    private String nodeIdentity() throws IOException {
        FakeSysfs host = new FakeSysfs(Files.createDirectories(temp.resolve("identity")));
        host.etcFile("iscsi/initiatorname.iscsi", "InitiatorName=iqn.1993-08.org.debian:01:5a1b2c3d4e5f\n");
        host.etcFile("nvme/hostnqn", "nqn.2014-08.org.nvmexpress:uuid:0c0a8a2e-2f7d-4c5e-9a51-0e4b3c6f7a81\n");
        host.etcFile("nvme/hostid", "0c0a8a2e-2f7d-4c5e-9a51-0e4b3c6f7a81\n");
        host.fcHost(5, "0x21000024ff7a3b01", "Online");
        PrometheusMeterRegistry registry = MetricsEndpoint.newRegistry();
        new NodeIdentityInfo(host.paths(), PluginHarness.NODE_ID, registry.getPrometheusRegistry()).refresh();
        return registry.scrape();
    }

    /**
     * A staged multipath volume's devices as the plugin's info series shows them: the map and its two paths, over a
     * fabricated sysfs, read by the same class into a registry of its own (the plugin's already has the family).
     */
    private String volumeDevices() throws IOException {
        FakeSysfs sysfs = new FakeSysfs(Files.createDirectories(temp.resolve("devices")));
        sysfs.addDisk(new ScsiAddress(3, 0, 0, 1), "sdb", new DeviceNumber(8, 16), "naa." + WWID.substring(1));
        sysfs.addDisk(new ScsiAddress(4, 0, 0, 1), "sdc", new DeviceNumber(8, 32), "naa." + WWID.substring(1));
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc"));
        RecordStore store = new RecordStore(temp.resolve("device-state"));
        Path kubelet = Path.of("/var/lib/kubelet");
        store.save(StagingRecord.newBuilder().setVolumeId("san").setTransport(FcTransport.NAME)
                .setStagingPath(kubelet + "/plugins/kubernetes.io/csi/volumeDevices/staging/pv-san")
                .setDevice(DeviceRecord.newBuilder().setPath("/dev/dm-0").setMajor(253).setMinor(0).setIdentity(WWID))
                .build());
        PrometheusMeterRegistry registry = MetricsEndpoint.newRegistry();
        new VolumeDeviceInfo(store, new BlockDevices(sysfs.paths()), kubelet, PluginHarness.NODE_ID,
                registry.getPrometheusRegistry()).refresh();
        return registry.scrape();
    }

    /** One staged FC volume with two paths, as the plugin's own path gauge reports it, in the plugin's registry. */
    private void sanVolumePaths(PluginHarness plugin) throws IOException {
        FakeSysfs sysfs = new FakeSysfs(Files.createDirectories(temp.resolve("host")));
        sysfs.addDisk(new ScsiAddress(3, 0, 0, 1), "sdb", new DeviceNumber(8, 16), "naa." + WWID.substring(1));
        sysfs.addDisk(new ScsiAddress(4, 0, 0, 1), "sdc", new DeviceNumber(8, 32), "naa." + WWID.substring(1));
        sysfs.addMap(0, "mpatha", WWID, List.of("sdb", "sdc"));
        RecordStore store = new RecordStore(temp.resolve("state"));
        store.save(StagingRecord.newBuilder().setVolumeId("san").setTransport(FcTransport.NAME)
                .putAttachment("wwid", WWID).putAttachment("multipathMap", "mpatha")
                .putAttachment("paths", "3:0:0:1=sdb,4:0:0:1=sdc").build());
        Host host = new Host(sysfs.paths(), new ScriptedCommandRunner(), new QueryOnlyMounter(),
                new RecordingBlockDevices(sysfs.paths()));
        Duration timeout = Duration.ofSeconds(1);
        FcTransport fc = new FcTransport(host, sysfs, new ManualClock().waiter(), () -> false,
                new LunAttacher.Timeouts(timeout, timeout, timeout));
        new VolumePathGauges(new Transports(List.of(fc)), store, plugin.plugin().registry()).refresh();
    }

    private record Family(String type, String help, Set<String> labels) {
    }

    /** The families of a Prometheus text exposition whose names start with {@code prefix}: type, help, labels. */
    private static Map<String, Family> families(String text, String prefix) {
        Map<String, String> types = new TreeMap<>();
        Map<String, String> helps = new TreeMap<>();
        for (String line : text.lines().toList()) {
            if (line.startsWith("# TYPE " + prefix)) {
                String[] parts = line.split(" ", 4);
                types.put(parts[2], parts[3]);
            } else if (line.startsWith("# HELP " + prefix)) {
                String[] parts = line.split(" ", 4);
                helps.put(parts[2], parts.length > 3 ? parts[3] : "");
            }
        }
        Map<String, Family> families = new TreeMap<>();
        Pattern label = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"");
        for (Map.Entry<String, String> type : types.entrySet()) {
            String name = type.getKey();
            Set<String> labels = new TreeSet<>();
            for (String line : text.lines().toList()) {
                if (line.startsWith("#") || !line.startsWith(name)) {
                    continue;
                }
                String sample = line.contains("{") ? line.substring(0, line.indexOf('{')) : line.split(" ")[0];
                if (!sample.equals(name) && !sample.equals(name + "_bucket") && !sample.equals(name + "_count")
                        && !sample.equals(name + "_sum")) {
                    continue;
                }
                Matcher m = label.matcher(line.contains("{") ? line.substring(line.indexOf('{')) : "");
                while (m.find()) {
                    if (!m.group(1).equals("le") && !m.group(1).equals("quantile")) {
                        labels.add(m.group(1));
                    }
                }
            }
            families.put(name, new Family(type.getValue(), helps.getOrDefault(name, ""), labels));
        }
        return families;
    }

    /** Every "blocknode_..." string literal in the main sources: the names the code registers meters under. */
    private static Set<String> namedInSources() throws IOException {
        Set<String> names = new TreeSet<>();
        Pattern literal = Pattern.compile("\"(blocknode_[a-z_]+)\"");
        Path sources = GeneratedDocs.repositoryRoot().resolve("java/src/main/java");
        try (Stream<Path> files = Files.walk(sources)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                Matcher m = literal.matcher(Files.readString(file));
                while (m.find()) {
                    names.add(m.group(1));
                }
            }
        }
        return names;
    }

    static String page(Map<String, Family> families, Map<String, Family> process, String buckets) {
        StringBuilder out = new StringBuilder(GeneratedDocs.header("Metrics",
                "a scrape of the plugin's /metrics in MetricsReferenceHostTest"));
        out.append("""
                With `--metrics-address` (the chart's `metrics.enabled`, port 9810 by default) the plugin serves
                Prometheus' text format at `http://<node IP>:9810/metrics`. These are all the series it exports
                (blocknode's own here, the JVM's and the process's [below](#the-plugin-process)); what to alert on,
                how to scrape them, and the dashboard and alert rules in the chart are in
                [Operations](../operations.md#monitoring).
                Histograms (`_seconds`) come with `_bucket`, `_count` and `_sum` samples, and Micrometer adds a
                `_max` gauge beside each: a series for each bucket, and three more, for each label set.
                """);
        out.append(buckets).append(" Why these, and what a bucket costs a fleet: [A fleet on paper]"
                + "(../design/scale.md#metric-series).\n");
        out.append("""
                Series with labels appear once a first sample of that label set exists (a method called, a phase
                run, a SAN volume staged); the others are exported from the start, at 0.

                | series | type | labels | what it counts |
                | --- | --- | --- | --- |
                """);
        table(out, families);
        out.append("""

                ## The plugin process

                The JVM's and the process's own series, from Micrometer's JVM memory, GC and uptime binders, and
                the resident memory the kernel counts (what the container's memory limit is measured against).
                `jvm_memory_*` come once per memory pool (`id`) of the collector in use; `jvm_gc_pause_seconds`
                appears with the first collection.

                | series | type | labels | what it counts |
                | --- | --- | --- | --- |
                """);
        table(out, process);
        return out.toString();
    }

    private static void table(StringBuilder out, Map<String, Family> families) {
        for (Map.Entry<String, Family> e : families.entrySet()) {
            Family f = e.getValue();
            List<String> labels = new ArrayList<>();
            f.labels().forEach(l -> labels.add("`" + l + "`"));
            out.append("| `").append(e.getKey()).append("` | ").append(f.type()).append(" | ")
                    .append(String.join(", ", labels)).append(" | ").append(f.help().replace("|", "\\|"))
                    .append(" |\n");
        }
    }
}
