package dev.blocknode.os.mount;

import dev.blocknode.os.DeviceNumber;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * Parser for /proc/self/mountinfo. Reading the whole table costs milliseconds on a node with thousands of
 * mounts, so it is used only where the whole table really is the question (is this device mounted anywhere
 * else?), never on the per-call hot path, which uses the O(1) native mount-point check instead.
 */
public final class MountTable {

    private MountTable() {
    }

    public static List<MountEntry> read(Path mountInfo) throws IOException {
        return read(mountInfo, entry -> true);
    }

    /**
     * The entries {@code wanted} keeps, read a line at a time: only they outlive their line. Reading the table
     * whole kept it as one string and every entry alive at once (about 1 MB on a node with 1,000 mounts), per
     * call: a drain unstaging 100 volumes at once held a 64 MiB heap near its limit.
     */
    public static List<MountEntry> read(Path mountInfo, Predicate<MountEntry> wanted) throws IOException {
        try (Stream<String> lines = Files.lines(mountInfo, StandardCharsets.UTF_8)) {
            return entries(lines, wanted);
        } catch (UncheckedIOException e) {
            throw e.getCause(); // a read failing part-way through the stream
        }
    }

    static List<MountEntry> parse(String text) {
        return entries(text.lines(), entry -> true);
    }

    private static List<MountEntry> entries(Stream<String> lines, Predicate<MountEntry> wanted) {
        return lines.filter(line -> !line.isBlank()).map(MountTable::parseLine).filter(wanted).toList();
    }

    static MountEntry parseLine(String line) {
        String[] fields = line.split(" ");
        int separator = -1;
        for (int i = 6; i < fields.length; i++) {
            if (fields[i].equals("-")) {
                separator = i;
                break;
            }
        }
        if (separator < 0 || separator + 2 >= fields.length) {
            throw new IllegalArgumentException("malformed mountinfo line: " + line);
        }
        return new MountEntry(
                Integer.parseInt(fields[0]),
                Integer.parseInt(fields[1]),
                DeviceNumber.parse(fields[2]),
                unescape(fields[3]),
                Path.of(unescape(fields[4])),
                fields[5],
                fields[separator + 1],
                unescape(fields[separator + 2]),
                separator + 3 < fields.length ? fields[separator + 3] : "",
                List.of(fields).subList(6, separator));
    }

    /** The kernel writes space, tab, newline and backslash in paths as three-digit octal escapes. */
    static String unescape(String field) {
        if (field.indexOf('\\') < 0) {
            return field;
        }
        StringBuilder out = new StringBuilder(field.length());
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\' && isOctal(field, i + 1)) {
                out.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    private static boolean isOctal(String s, int from) {
        if (from + 3 > s.length()) {
            return false;
        }
        for (int i = from; i < from + 3; i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '7') {
                return false;
            }
        }
        return true;
    }
}
