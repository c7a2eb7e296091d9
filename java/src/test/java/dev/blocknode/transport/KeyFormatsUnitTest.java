package dev.blocknode.transport;

import dev.blocknode.testing.GeneratedDocs;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The key formats are the plugin's and the deploy validator's alike: deploy/validate/keyformats.json is what this
 * test renders from {@link KeyFormats#ALL} (stale: it fails; {@code make docs} rewrites it), and the cases in
 * deploy/validate/testdata/keyformats-cases.tsv, which the validator's Go test runs too, get the answers listed.
 */
class KeyFormatsUnitTest {

    static final String TABLE = "deploy/validate/keyformats.json";
    static final String CASES = "deploy/validate/testdata/keyformats-cases.tsv";

    @Test
    void theValidatorsTableIsRenderedFromTheFormats() throws IOException {
        GeneratedDocs.check(TABLE, render());
    }

    @Test
    void eachCaseGetsTheAnswerListed() throws IOException {
        Map<String, KeyFormats.Format> byName = KeyFormats.ALL.stream()
                .collect(Collectors.toMap(KeyFormats.Format::name, Function.identity()));
        List<String> wrong = new ArrayList<>();
        Map<String, Integer> perFormat = new TreeMap<>();
        for (String line : Files.readAllLines(GeneratedDocs.repositoryRoot().resolve(CASES), StandardCharsets.UTF_8)) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            String[] cells = line.split("\t", -1);
            KeyFormats.Format format = byName.get(cells[0]);
            assertTrue(format != null, "no format " + cells[0]);
            boolean ok = cells[2].equals("ok");
            if (format.accepts(cells[1]) != ok) {
                wrong.add(line);
            }
            perFormat.merge(cells[0], 1, Integer::sum);
        }
        assertEquals(List.of(), wrong, "cases KeyFormats answers otherwise");
        assertEquals(byName.keySet(), perFormat.keySet(), "every format has cases");
    }

    /** The table, one format a line; JSON that Go's encoding/json reads. */
    static String render() {
        StringBuilder json = new StringBuilder("{\n  \"generatedBy\": \"dev.blocknode.transport.KeyFormats, through"
                + " KeyFormatsUnitTest (make docs): do not edit\",\n  \"formats\": [\n");
        for (int i = 0; i < KeyFormats.ALL.size(); i++) {
            KeyFormats.Format format = KeyFormats.ALL.get(i);
            json.append("    {\"name\": ").append(quote(format.name()))
                    .append(", \"noun\": ").append(quote(format.noun()))
                    .append(", \"pattern\": ").append(quote(format.pattern()))
                    .append(", \"maxLength\": ").append(format.maxLength())
                    .append(", \"maxValue\": ").append(quote(format.maxValue().map(Object::toString).orElse("")))
                    .append(", \"appliesWhen\": ").append(quote(format.appliesWhen()))
                    .append(", \"description\": ").append(quote(format.description()))
                    .append(i + 1 < KeyFormats.ALL.size() ? "},\n" : "}\n");
        }
        return json.append("  ]\n}\n").toString();
    }

    private static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
