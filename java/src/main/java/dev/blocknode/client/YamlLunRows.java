package dev.blocknode.client;

import org.snakeyaml.engine.v2.api.LoadSettings;
import org.snakeyaml.engine.v2.api.lowlevel.Parse;
import org.snakeyaml.engine.v2.events.CollectionStartEvent;
import org.snakeyaml.engine.v2.events.Event;
import org.snakeyaml.engine.v2.events.NodeEvent;
import org.snakeyaml.engine.v2.events.ScalarEvent;
import org.snakeyaml.engine.v2.exceptions.YamlEngineException;

import java.io.IOException;
import java.io.Reader;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * {@code blocknode pv}'s YAML input, parsed by SnakeYAML Engine (YAML 1.2) as a stream of events, one LUN at a time:
 * a list of LUNs, each a mapping of column to value, a value being a scalar or a list of scalars (which becomes the
 * comma-separated value volume_context takes). Every scalar is kept as the text it is written as ({@code 0x5006...}
 * and {@code on} stay strings: no type is resolved, so none can be constructed). Anything else is refused with its
 * line: a nested list or mapping, an anchor or alias, an explicit tag.
 */
final class YamlLunRows {

    private final Iterator<Event> events;
    private Event current;

    private YamlLunRows(Iterator<Event> events) {
        this.events = events;
    }

    /**
     * Hands each LUN to {@code rows} as soon as it is read.
     *
     * @throws IllegalArgumentException for input that is not such a list, naming its line
     * @throws IOException              when the input cannot be read, or is larger than {@link LimitedInput} allows
     */
    static void read(Reader input, Consumer<LunRow> rows) throws IOException {
        LoadSettings settings = LoadSettings.builder().setCodePointLimit(LimitedInput.MAX_BYTES)
                .setMaxAliasesForCollections(0).setParseComments(false).build();
        try {
            new YamlLunRows(new Parse(settings).parseReader(input).iterator()).stream(rows);
        } catch (YamlEngineException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            throw new IllegalArgumentException(oneLine(e.getMessage()), e);
        }
    }

    private void stream(Consumer<LunRow> rows) {
        expect(Event.ID.StreamStart);
        int item = 0;
        while (next().getEventId() == Event.ID.DocumentStart) {
            next();
            if (current.getEventId() == Event.ID.SequenceStart) {
                plain(current);
                while (next().getEventId() != Event.ID.SequenceEnd) {
                    item++;
                    rows.accept(lun(item));
                }
            } else if (!(current instanceof ScalarEvent empty && empty.getValue().isEmpty())) {
                throw refused(current, "expected a list of LUNs, each a mapping of column: value");
            }
            expect(Event.ID.DocumentEnd);
        }
        if (current.getEventId() != Event.ID.StreamEnd) {
            throw refused(current, "expected the end of the input");
        }
    }

    private LunRow lun(int item) {
        if (current.getEventId() != Event.ID.MappingStart) {
            throw refused(current, "item " + item + " is not a mapping of column: value");
        }
        plain(current);
        String where = "item " + item + " (line " + line(current) + ")";
        Map<String, String> columns = new LinkedHashMap<>();
        List<String> given = new ArrayList<>();
        while (next().getEventId() != Event.ID.MappingEnd) {
            if (!(current instanceof ScalarEvent keyEvent)) {
                throw refused(current, "a column's name is a word, not a list or mapping");
            }
            plain(keyEvent);
            String key = keyEvent.getValue().strip();
            if (given.contains(key)) {
                throw refused(keyEvent, "column \"" + key + "\" given twice");
            }
            given.add(key);
            String value = value(key);
            if (!value.isEmpty()) {
                columns.put(key, value);
            }
        }
        return new LunRow(where, columns);
    }

    /** A scalar's text, or a list's items joined by commas; blank is absent. */
    private String value(String key) {
        next();
        if (current instanceof ScalarEvent scalar) {
            plain(scalar);
            return scalar.getValue().strip();
        }
        if (current.getEventId() != Event.ID.SequenceStart) {
            throw refused(current, "column \"" + key + "\": a value is a scalar or a list of scalars, never a mapping");
        }
        plain(current);
        List<String> items = new ArrayList<>();
        while (next().getEventId() != Event.ID.SequenceEnd) {
            if (!(current instanceof ScalarEvent item)) {
                throw refused(current, "column \"" + key + "\": a list's items are scalars, never lists or mappings");
            }
            plain(item);
            if (!item.getValue().isBlank()) {
                items.add(item.getValue().strip());
            }
        }
        return String.join(",", items);
    }

    /** Refuses what the input has no use for and a parser could be made to expand or construct. */
    private static void plain(Event event) {
        if (event.getEventId() == Event.ID.Alias) {
            throw refused(event, "aliases (*name) are not taken");
        }
        if (event instanceof NodeEvent node && node.getAnchor().isPresent()) {
            throw refused(event, "anchors (&name) are not taken");
        }
        boolean tagged = event instanceof ScalarEvent scalar ? scalar.getTag().isPresent()
                : event instanceof CollectionStartEvent collection && collection.getTag().isPresent();
        if (tagged) {
            throw refused(event, "tags (!name) are not taken");
        }
    }

    private Event next() {
        if (!events.hasNext()) {
            throw new IllegalArgumentException("the input ends early");
        }
        current = events.next();
        if (current.getEventId() == Event.ID.Alias) {
            plain(current);
        }
        return current;
    }

    private void expect(Event.ID id) {
        if (next().getEventId() != id) {
            throw refused(current, "expected " + id);
        }
    }

    private static IllegalArgumentException refused(Event event, String why) {
        return new IllegalArgumentException("line " + line(event) + ": " + why);
    }

    private static int line(Event event) {
        return event.getStartMark().map(mark -> mark.getLine() + 1).orElse(0);
    }

    /** SnakeYAML's messages span lines, with a snippet of the input and a caret (indented): the rest says it all. */
    private static String oneLine(String message) {
        return String.valueOf(message).lines().filter(l -> !l.isBlank() && !l.startsWith("    "))
                .map(String::strip).reduce((a, b) -> a + " " + b).orElse("not YAML");
    }
}
