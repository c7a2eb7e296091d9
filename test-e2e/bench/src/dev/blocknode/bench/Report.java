package dev.blocknode.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The results table (Markdown), with the machine, the absolute values and the diagnostics. */
final class Report {

    private record Row(String figure, String what, String measured, String baseline, double ratio, String goal,
                       Boolean met, double ofLimit) {
    }

    private final List<Row> rows = new ArrayList<>();
    private final Map<String, List<String>> details = new LinkedHashMap<>();
    private final List<String> diagnostics = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    private final String date = ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME);
    private String machine = "";

    /**
     * @param met     null when the row has no goal of its own
     * @param ofLimit measured / limit, for the "met" column
     */
    void row(String figure, String what, String measured, String baseline, double ratio, String goal, Boolean met,
             double ofLimit) {
        rows.add(new Row(figure, what, measured, baseline, ratio, goal, met, ofLimit));
    }

    void detail(String figure, String line) {
        details.computeIfAbsent(figure, k -> new ArrayList<>()).add(line);
    }

    void diag(String line) {
        diagnostics.add(line);
    }

    void note(String line) {
        notes.add(line);
    }

    void machine(BenchOptions o, int cores, String loadBefore, String loadAfter, double seconds) {
        String model = "?";
        String kernel = "?";
        try {
            model = Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name"))
                    .map(l -> l.substring(l.indexOf(':') + 1).strip()).findFirst().orElse("?");
            kernel = Files.readString(Path.of("/proc/sys/kernel/osrelease")).strip();
        } catch (IOException ignored) {
            // left as "?"
        }
        machine = String.format(Locale.ROOT, "- machine: %d CPUs (nproc), %s, Linux %s%n- date: %s%n"
                        + "- JDK: %s %s (%s), for the plugin and the bench client%n"
                        + "- load average (1, 5, 15 min) before: %s; after: %s; run time %.0f s%n",
                cores, model, kernel, date, System.getProperty("java.vm.vendor"),
                System.getProperty("java.runtime.version"), System.getProperty("java.home"), loadBefore, loadAfter,
                seconds);
    }

    String render() {
        StringBuilder out = new StringBuilder("# blocknode benchmark (make bench)\n\n").append(machine).append('\n');
        out.append("Every ratio is measured / baseline, both from this run, except g's: reference driver / blocknode,"
                + " so above 1 blocknode is faster. \"met\" compares the goal's own quantity (a ratio for a-c and g,"
                + " an absolute limit for d and e) and says how close it is (for g: the limit / the ratio).\n\n");
        out.append("| fig | what | measured | baseline (same run) | ratio | goal | met |\n");
        out.append("|---|---|---|---|---|---|---|\n");
        for (Row r : rows) {
            String met = r.met() == null ? "-" : r.met()
                    ? String.format(Locale.ROOT, "yes (%.0f%% of the limit)", r.ofLimit() * 100)
                    : String.format(Locale.ROOT, "NO (%.2fx the limit)", r.ofLimit());
            out.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s |%n", r.figure(), r.what(),
                    r.measured(), r.baseline(), Samples.ratio(r.ratio()), r.goal(), met));
        }
        out.append("\n## Absolute values\n");
        for (Map.Entry<String, List<String>> e : details.entrySet()) {
            out.append("\n(").append(e.getKey()).append(")\n");
            e.getValue().forEach(l -> out.append("- ").append(l).append('\n'));
        }
        if (!diagnostics.isEmpty()) {
            out.append("\n## Diagnostics (where the time goes; not goals)\n\n");
            diagnostics.forEach(l -> out.append("- ").append(l).append('\n'));
        }
        if (!notes.isEmpty()) {
            out.append("\n## Notes\n\n");
            notes.forEach(l -> out.append("- ").append(l).append('\n'));
        }
        return out.toString();
    }
}
