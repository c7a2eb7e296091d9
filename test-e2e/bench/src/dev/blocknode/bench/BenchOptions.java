package dev.blocknode.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The bench's settings, from bench.sh's --flag value pairs. */
record BenchOptions(Path jar, Path work, Path helper, Path jvmArgs, Path aotCache, Path results, Path pidFile,
               Path classes, int cycles, int rounds, int clutter, int burst, int statsVolumes, int sweeps,
               int startTrials, long idleSettleMillis, String figures, List<String> p1ExtraFlags, Path profileDir,
               Path reference, Path kubeletClient) {

    static final String ALL_FIGURES = "abcdefgkl";

    static BenchOptions parse(String[] args) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --flag value, got " + args[i]);
            }
            m.put(args[i].substring(2), args[i + 1]);
        }
        String aot = m.getOrDefault("aot-cache", "");
        return new BenchOptions(Path.of(req(m, "jar")), Path.of(req(m, "work")), Path.of(req(m, "helper")),
                Path.of(req(m, "jvm-args")), aot.isEmpty() ? null : Path.of(aot), Path.of(req(m, "results")),
                Path.of(req(m, "pid-file")), Path.of(req(m, "classes")),
                Integer.parseInt(m.getOrDefault("cycles", "400")),
                Integer.parseInt(m.getOrDefault("rounds", "8")),
                Integer.parseInt(m.getOrDefault("clutter", "3000")),
                Integer.parseInt(m.getOrDefault("burst", "100")),
                Integer.parseInt(m.getOrDefault("stats-volumes", "1000")),
                Integer.parseInt(m.getOrDefault("sweeps", "5")),
                Integer.parseInt(m.getOrDefault("start-trials", "5")),
                Long.parseLong(m.getOrDefault("idle-settle-ms", "2000")),
                m.getOrDefault("figures", ALL_FIGURES),
                m.getOrDefault("p1-extra-flags", "").isBlank() ? List.of()
                        : List.of(m.get("p1-extra-flags").strip().split("\\s+")),
                m.getOrDefault("profile-dir", "").isBlank() ? null : Path.of(m.get("profile-dir")),
                m.getOrDefault("reference", "").isBlank() ? null : Path.of(m.get("reference")),
                m.getOrDefault("kubelet-client", "").isBlank() ? null : Path.of(m.get("kubelet-client")));
    }

    /**
     * A bench class run as the image runs the plugin: this JDK's java with deploy/jvm.args (the image's flags; no AOT
     * cache), then {@code jvmOptions}, on the plugin's jar and the bench's classes.
     */
    List<String> imageJvm(List<String> jvmOptions, String mainClass, String... args) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("@" + jvmArgs);
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", jar + ":" + classes, mainClass));
        command.addAll(List.of(args));
        return command;
    }

    boolean has(char figure) {
        return figures.indexOf(figure) >= 0;
    }

    private static String req(Map<String, String> m, String key) {
        String v = m.get(key);
        if (v == null) {
            throw new IllegalArgumentException("--" + key + " is required");
        }
        return v;
    }
}
