package dev.blocknode.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What each MiB of a plugin's resident memory is: its mappings from /proc/PID/smaps (the AOT cache, libjvm.so,
 * the Java heap and the code cache by their address ranges, the rest of the anonymous memory), and the JVM's
 * own account of that rest from Native Memory Tracking (the plugin must run with
 * -XX:NativeMemoryTracking=summary, whose bookkeeping is counted too).
 */
final class Footprint {

    private static final Pattern HEX = Pattern.compile("0x[0-9a-f]+");
    /** "-                 Java Heap (reserved=65536KB, committed=8192KB)" */
    private static final Pattern CATEGORY = Pattern.compile("^-\\s+(.+?) \\(reserved=(\\d+)KB, committed=(\\d+)KB");
    private static final Pattern MALLOC = Pattern.compile("\\(malloc=(\\d+)KB");
    private static final Pattern STACK = Pattern.compile("\\(stack: reserved=\\d+KB, committed=(\\d+)KB");
    private static final Pattern THREADS = Pattern.compile("\\(threads #(\\d+)\\)");

    private Footprint() {
    }

    /** One line: RSS by owner, then NMT's categories of the anonymous rest. */
    static String describe(long pid) throws IOException {
        String jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
        String id = Long.toString(pid);
        long[] heap = range(Volumes.runCommand(List.of(jcmd, id, "GC.heap_info")), false);
        long[] code = range(Volumes.runCommand(List.of(jcmd, id, "Compiler.codecache")).stream()
                .filter(l -> l.contains("bounds")).toList(), true);
        Map<String, long[]> byOwner = rssByOwner(pid, heap, code);
        long total = byOwner.values().stream().mapToLong(v -> v[0]).sum();
        StringBuilder out = new StringBuilder("RSS ").append(Samples.mib(total)).append(" = ");
        for (Map.Entry<String, long[]> e : byOwner.entrySet()) {
            out.append(e.getKey()).append(' ').append(Samples.mib(e.getValue()[0]));
            if (e.getValue()[1] > 0 && e.getKey().endsWith(".aot")) {
                out.append(" (").append(Samples.mib(e.getValue()[1])).append(" of it written: relocated pointers)");
            }
            out.append(" + ");
        }
        out.setLength(out.length() - 3);
        out.append("; NMT, committed: ").append(nmt(Volumes.runCommand(List.of(jcmd, id, "VM.native_memory", "summary",
                "scale=KB"))));
        return out.toString();
    }

    /** Lowest and highest address in the lines (the heap: its generations; the code cache: low, high, limit). */
    private static long[] range(List<String> lines, boolean firstAndThird) {
        List<Long> addresses = new ArrayList<>();
        for (String line : lines) {
            Matcher m = HEX.matcher(line);
            while (m.find()) {
                addresses.add(Long.parseUnsignedLong(m.group().substring(2), 16));
            }
        }
        if (addresses.isEmpty()) {
            return new long[] {0, 0};
        }
        if (firstAndThird && addresses.size() >= 3) {
            return new long[] {addresses.get(0), addresses.get(2)};
        }
        return new long[] {addresses.stream().min(Long::compare).orElseThrow(),
                addresses.stream().max(Long::compare).orElseThrow()};
    }

    /** KiB resident {rss, anonymous} by owner, in a fixed order, the small file mappings summed. */
    private static Map<String, long[]> rssByOwner(long pid, long[] heap, long[] code) throws IOException {
        Map<String, long[]> owners = new LinkedHashMap<>();
        String current = "";
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "smaps"))) {
            String[] f = line.split("\\s+");
            if (f.length >= 5 && f[0].matches("[0-9a-f]+-[0-9a-f]+")) {
                String[] range = f[0].split("-");
                long start = Long.parseUnsignedLong(range[0], 16);
                long end = Long.parseUnsignedLong(range[1], 16);
                String name = f.length >= 6 ? f[5] : "";
                if (name.endsWith(".aot") || name.endsWith(".jsa") || name.endsWith("libjvm.so")) {
                    current = Path.of(name).getFileName().toString();
                } else if (name.startsWith("/")) {
                    current = "other files (libc, the JDK's modules, ...)";
                } else if (start >= heap[0] && end <= heap[1]) {
                    current = "Java heap";
                } else if (start >= code[0] && end <= code[1]) {
                    current = "code cache";
                } else {
                    current = "other anonymous (malloc, thread stacks, metaspace)";
                }
            } else if (line.startsWith("Rss:")) {
                owners.computeIfAbsent(current, k -> new long[2])[0] += Long.parseLong(f[1]);
            } else if (line.startsWith("Anonymous:")) {
                owners.computeIfAbsent(current, k -> new long[2])[1] += Long.parseLong(f[1]);
            }
        }
        return owners;
    }

    /** NMT's categories above 256 KiB committed, with their malloc part, thread stacks and thread count. */
    private static String nmt(List<String> lines) {
        StringBuilder out = new StringBuilder();
        for (String line : lines) {
            String s = line.strip();
            if (s.startsWith("malloc:") && out.isEmpty()) {
                out.append("malloc ").append(s.substring(7).strip().split(" ")[0]).append(" in all; ");
            }
            Matcher m = CATEGORY.matcher(s);
            if (m.find()) {
                long committed = Long.parseLong(m.group(3));
                if (committed >= 256) {
                    // NMT's "Other" is memory from Unsafe.allocateMemory: Netty's pooled direct buffers here.
                    String name = m.group(1).equals("Other") ? "Other (direct buffers)" : m.group(1);
                    out.append(name).append(' ').append(committed).append(" KiB");
                    int at = lines.indexOf(line);
                    List<String> detail = lines.subList(at + 1, Math.min(lines.size(), at + 4));
                    for (String d : detail) {
                        Matcher t = THREADS.matcher(d);
                        Matcher st = STACK.matcher(d);
                        Matcher ma = MALLOC.matcher(d);
                        if (t.find()) {
                            out.append(", ").append(t.group(1)).append(" threads");
                        } else if (st.find()) {
                            out.append(", stacks ").append(st.group(1)).append(" KiB");
                        } else if (ma.find() && !m.group(1).equals("Java Heap")) {
                            out.append(" (malloc ").append(ma.group(1)).append(" KiB)");
                        }
                    }
                    out.append("; ");
                }
            }
        }
        return out.length() > 2 ? out.substring(0, out.length() - 2) : "(no NMT summary)";
    }
}
