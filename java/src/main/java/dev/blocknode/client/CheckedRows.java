package dev.blocknode.client;

import dev.blocknode.volume.StageRequestRules;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The rows of one {@code blocknode pv} run, checked as the parser hands them over: each row's problems are kept as
 * refusals, each passing row's documents until the end, when they are printed only if no row was refused (a half
 * list is never applied). At most {@value #MAX_ROWS} rows: what the documents of that many take fits the plugin
 * image's heap (-Xmx64m) with room to spare, and a longer list is refused, whole, before it runs out.
 */
final class CheckedRows implements Consumer<LunRow> {

    static final int MAX_ROWS = 20_000;
    /** Refused rows whose problems are kept to print: enough to see what is wrong, a bounded heap for the rest. */
    static final int MAX_SHOWN_REFUSALS = 100;

    private final String source;
    private final String driver;
    private final boolean claim;
    private final String namespace;
    private final StageRequestRules rules;
    private final List<String> documents = new ArrayList<>();
    private final List<String> refusals = new ArrayList<>();
    private final Map<String, String> handles = new HashMap<>();
    private final Map<String, String> names = new HashMap<>();
    private int rows;
    private int refusedRows;

    CheckedRows(String source, String driver, boolean claim, String namespace, StageRequestRules rules) {
        this.source = source;
        this.driver = driver;
        this.claim = claim;
        this.namespace = namespace;
        this.rules = rules;
    }

    /**
     * @throws IllegalArgumentException past {@value #MAX_ROWS} rows: the input is refused as too long
     */
    @Override
    public void accept(LunRow row) {
        if (++rows > MAX_ROWS) {
            throw new IllegalArgumentException("more than " + MAX_ROWS + " LUNs, the most one run of blocknode pv"
                    + " takes: split the list into several files");
        }
        List<String> problems = new ArrayList<>();
        StaticVolume volume = null;
        try {
            volume = StaticVolume.of(row, rules, namespace);
        } catch (StaticVolume.RefusedRow refused) {
            problems.addAll(refused.problems());
        }
        if (volume != null) {
            // Kubelet's staging path and the plugin's record are the handle's: two PVs with one are one volume.
            String other = handles.putIfAbsent(volume.volumeHandle(), row.where());
            if (other != null) {
                problems.add("volumeHandle \"" + volume.volumeHandle() + "\" is also " + other + "'s");
            }
            other = names.putIfAbsent(volume.name(), row.where());
            if (other != null) {
                problems.add("name \"" + volume.name() + "\" is also " + other + "'s");
            }
        }
        if (!problems.isEmpty()) {
            if (++refusedRows <= MAX_SHOWN_REFUSALS) {
                problems.forEach(problem -> refusals.add(source + " " + row.label() + ": " + problem));
            }
            documents.clear(); // nothing will be printed now: keep no more
        } else if (refusedRows == 0) {
            documents.add(PvYaml.persistentVolume(volume, driver, namespace, claim)
                    + (claim ? PvYaml.claim(volume, namespace) : ""));
        }
    }

    int rows() {
        return rows;
    }

    int refusedRows() {
        return refusedRows;
    }

    /**
     * One line per problem: the input, the row and its name, then what is wrong; of the first
     * {@value #MAX_SHOWN_REFUSALS} refused rows.
     */
    List<String> refusals() {
        return refusals;
    }

    void printTo(PrintStream out) {
        documents.forEach(out::print);
    }
}
