package dev.blocknode.client;

import dev.blocknode.testing.GeneratedDocs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * blocknode pv within the plugin image's heap: inputs as long as its limits allow are printed, and longer ones are
 * refused with a message on standard error, never an OutOfMemoryError, in a child JVM started with the image's own
 * flags (deploy/jvm.args: -Xmx64m, exit on OutOfMemoryError) as {@code kubectl exec ... blocknode pv} starts it.
 */
class PvLimitsUnitTest {

    @TempDir
    Path dir;

    /** One iSCSI LUN as an operator lists it: two portals, CHAP, the WWID checked at stage. */
    private static String row(int i) {
        return String.format("- name: pg-data-%1$06d%n  size: 100Gi%n  targetPortal: 10.0.0.10:3260%n"
                + "  portals: [10.0.1.10:3260, 10.0.2.10:3260]%n  iqn: iqn.2005-10.org.example:storage.pg%n"
                + "  lun: %2$d%n  wwid: 36001405abcdef0123456789abc%1$06d%n  fsType: ext4%n"
                + "  secretName: chap-pg%n  secretNamespace: blocknode%n", i, i % 16384);
    }

    private Path rows(int count) throws IOException {
        Path file = dir.resolve("luns-" + count + ".yaml");
        try (Writer out = Files.newBufferedWriter(file)) {
            for (int i = 0; i < count; i++) {
                out.write(row(i));
            }
        }
        return file;
    }

    @Test
    void asManyRowsAsTheLimitAllowsArePrintedUnderTheImagesHeap() throws Exception {
        Run run = pv(rows(CheckedRows.MAX_ROWS), "--claim");
        assertEquals(PvCommand.PRINTED, run.code(), run.err());
        assertEquals("", run.err());
        assertEquals(2 * CheckedRows.MAX_ROWS, run.out().split("\n---\n", -1).length, "a PV and a claim per row");
    }

    @Test
    void moreRowsThanTheLimitAreRefusedOnStandardErrorNotByRunningOutOfMemory() throws Exception {
        Run run = pv(rows(50_000));
        assertEquals(PvCommand.CANNOT_READ, run.code(), run.err());
        assertEquals("", run.out());
        assertTrue(run.err().contains("more than " + CheckedRows.MAX_ROWS + " LUNs, the most one run of blocknode pv"
                + " takes: split the list"), run.err());
    }

    @Test
    void asManyRefusedRowsAsTheLimitAllowsAreCountedWithoutKeepingEveryProblem() throws Exception {
        Path file = dir.resolve("refused.yaml");
        try (Writer out = Files.newBufferedWriter(file)) {
            for (int i = 0; i < CheckedRows.MAX_ROWS; i++) {
                out.write(row(i).replace("  fsType: ext4", "  fsTyp: ext4").replace("wwid: 3", "wwid: 4"));
            }
        }
        Run run = pv(file);
        assertEquals(PvCommand.REFUSED, run.code(), run.err());
        assertEquals("", run.out());
        assertTrue(run.err().endsWith("the problems of the first " + CheckedRows.MAX_SHOWN_REFUSALS + " refused rows"
                + " are shown\nblocknode pv: " + CheckedRows.MAX_ROWS + " of " + CheckedRows.MAX_ROWS
                + " row(s) refused; nothing printed\n"), run.err());
        assertEquals(2 * CheckedRows.MAX_SHOWN_REFUSALS + 2, run.err().lines().count(), "two problems a row shown");
    }

    @Test
    void aHugeValueIsRefusedAtItsLineNotReadWhole() throws Exception {
        Path file = dir.resolve("huge.csv");
        try (Writer out = Files.newBufferedWriter(file)) {
            out.write("name,size,devicePath\na,1Gi,/dev/");
            char[] chunk = new char[1024 * 1024];
            java.util.Arrays.fill(chunk, 'x');
            for (int i = 0; i < 40; i++) {
                out.write(chunk);
            }
            out.write("\n");
        }
        Run run = pv(file);
        assertEquals(PvCommand.CANNOT_READ, run.code(), run.err());
        assertEquals("", run.out());
        assertTrue(run.err().contains("line 2 is longer than " + LimitedInput.MAX_LINE + " characters"), run.err());
    }

    @Test
    void whatTheJvmSaysWhenItRunsOutOfMemoryGoesToStandardError() throws Exception {
        // A heap far smaller than the image's: the JVM's own last words must not land in the YAML a user keeps.
        Run run = pv(rows(CheckedRows.MAX_ROWS), "-Xmx12m");
        assertEquals("", run.out());
        assertTrue(run.err().contains("OutOfMemoryError"), run.err());
    }

    @Test
    void theInputIsBoundedDecodedStrictlyAndLosesItsByteOrderMark() throws IOException {
        assertEquals("name", read(new byte[]{(byte) 0xEF, (byte) 0xBB, (byte) 0xBF, 'n', 'a', 'm', 'e'}));
        assertTrue(assertThrows(LimitedInput.Refused.class, () -> read(new byte[]{'a', '\n', (byte) 0xC3, '('}))
                .getMessage().contains("is not UTF-8 text"));
        byte[] tooMuch = new byte[LimitedInput.MAX_BYTES + 1];
        java.util.Arrays.fill(tooMuch, (byte) '\n');
        assertTrue(assertThrows(LimitedInput.Refused.class, () -> read(tooMuch)).getMessage()
                .contains("larger than 8 MiB"));
        // The limits are the parsers' too: SnakeYAML's and Commons CSV's wrappings of them are undone.
        String longLine = "name,size\n" + "x".repeat(LimitedInput.MAX_LINE + 1) + "\n";
        assertThrows(LimitedInput.Refused.class, () -> CsvLunRows.read(limited(longLine), row -> { }));
        assertThrows(LimitedInput.Refused.class, () -> YamlLunRows.read(limited("- name: " + longLine), row -> { }));
        List<LunRow> rows = new ArrayList<>();
        YamlLunRows.read(new StringReader("- name: a\n"), rows::add);
        assertEquals(1, rows.size());
    }

    @Test
    void theReferencePageAndTheHelpSayTheLimits() throws IOException {
        String page = Files.readString(GeneratedDocs.repositoryRoot().resolve("docs/reference/pv.md"));
        for (String row : List.of("| the input | " + LimitedInput.MAX_BYTES / (1024 * 1024) + " MiB |",
                "| a line | " + LimitedInput.MAX_LINE + " characters", "| LUNs | " + CheckedRows.MAX_ROWS + " |")) {
            assertTrue(page.contains(row), "docs/reference/pv.md's limits lack " + row);
        }
        assertTrue(PvCommand.HELP.contains("At most 8 MiB of input, " + LimitedInput.MAX_LINE + " characters a line, "
                + CheckedRows.MAX_ROWS + " LUNs."), PvCommand.HELP);
    }

    private static String read(byte[] bytes) throws IOException {
        try (Reader in = new LimitedInput(new ByteArrayInputStream(bytes))) {
            StringBuilder text = new StringBuilder();
            char[] buffer = new char[8192];
            for (int n; (n = in.read(buffer, 0, buffer.length)) >= 0; ) {
                text.append(buffer, 0, n);
            }
            return text.toString().strip();
        }
    }

    private static Reader limited(String text) {
        return new LimitedInput(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)));
    }

    /**
     * This JVM's class path without the SLF4J API that ArchUnit, a test dependency, brings: with it and no provider,
     * SLF4J warns on standard error; the plugin's jar holds neither.
     */
    private static String pluginClassPath() {
        return java.util.Arrays.stream(System.getProperty("java.class.path").split(java.io.File.pathSeparator))
                .filter(entry -> !entry.contains("/org/slf4j/"))
                .collect(java.util.stream.Collectors.joining(java.io.File.pathSeparator));
    }

    private record Run(int code, String out, String err) {
    }

    /** {@code blocknode pv [--claim] -} on {@code input}, as the image's wrapper runs it; JVM flags may follow. */
    private Run pv(Path input, String... extra) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "@" + GeneratedDocs.repositoryRoot().resolve("deploy/jvm.args")));
        List<String> pvArgs = new ArrayList<>(List.of("pv"));
        for (String arg : extra) {
            (arg.startsWith("-X") ? command : pvArgs).add(arg);
        }
        pvArgs.add(input.toString().endsWith(".csv") ? input.toString() : "-");
        command.addAll(List.of("-cp", pluginClassPath(), "dev.blocknode.Main"));
        command.addAll(pvArgs);
        Path out = dir.resolve("out");
        Path err = dir.resolve("err");
        Process process = new ProcessBuilder(command).redirectInput(input.toFile()).redirectOutput(out.toFile())
                .redirectError(err.toFile()).start();
        if (!process.waitFor(3, TimeUnit.MINUTES)) {
            process.destroyForcibly().waitFor();
            throw new AssertionError("blocknode pv did not finish in 3 minutes");
        }
        return new Run(process.exitValue(), Files.readString(out), Files.readString(err));
    }
}
