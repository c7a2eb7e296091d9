package dev.blocknode.client;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One LUN of {@code blocknode pv}'s input: its columns as written (blank cells left out), and where it is in the
 * input, which every refusal names ("row 3", "item 2 (line 7)").
 */
record LunRow(String where, Map<String, String> columns) {

    LunRow {
        // In the input's order, which the printed volumeAttributes keep (Map.copyOf's order changes per run).
        columns = Collections.unmodifiableMap(new LinkedHashMap<>(columns));
    }

    /** The row's place and, where it has one, its name: what a person looks for in the file. */
    String label() {
        String name = columns.get(StaticVolume.NAME);
        return name == null ? where : where + " \"" + name + "\"";
    }
}
