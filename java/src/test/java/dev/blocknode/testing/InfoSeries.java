package dev.blocknode.testing;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** An info series (every sample's value 1, its facts in its labels) read back from a Prometheus scrape. */
public final class InfoSeries {

    /** One label: its name, then its value as the exposition format escapes it (backslash, quote, newline). */
    private static final Pattern LABEL = Pattern.compile("([a-z_]+)=\"((?:[^\"\\\\]|\\\\.)*)\"");

    private InfoSeries() {
    }

    /** Each sample's labels, ordered by their text (so by the first label's value); every value must be 1. */
    public static List<Map<String, String>> rows(String scrape, String name) {
        List<Map<String, String>> rows = new ArrayList<>();
        for (String line : scrape.lines().toList()) {
            if (line.startsWith(name + "{")) {
                assertTrue(line.endsWith("} 1"), line);
                Map<String, String> labels = new TreeMap<>();
                Matcher m = LABEL.matcher(line.substring(line.indexOf('{'), line.lastIndexOf('}')));
                while (m.find()) {
                    labels.put(m.group(1), m.group(2));
                }
                rows.add(labels);
            }
        }
        rows.sort(Comparator.comparing(Map::toString));
        return rows;
    }
}
