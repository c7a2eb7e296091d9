package dev.blocknode.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * Reference pages under docs/ generated from the code. A test renders the page and compares it with the file:
 * a stale page fails the test. With BLOCKNODE_WRITE_DOCS=1 in the environment ({@code make docs}) the test
 * writes the page instead.
 */
public final class GeneratedDocs {

    private GeneratedDocs() {
    }

    /** The repository's root: Surefire runs in java/, an IDE may run in the root. */
    public static Path repositoryRoot() {
        Path here = Path.of("").toAbsolutePath();
        for (Path dir = here; dir != null; dir = dir.getParent()) {
            if (Files.isDirectory(dir.resolve("docs")) && Files.isRegularFile(dir.resolve("Makefile"))) {
                return dir;
            }
        }
        throw new IllegalStateException("no repository root (a directory with docs/ and a Makefile) above " + here);
    }

    public static String header(String title, String source) {
        return "# " + title + "\n\n"
                + "<!-- Generated from " + source + " by `make docs`; a test fails when this page is stale."
                + " Do not edit by hand. -->\n\n";
    }

    public static void check(String relative, String rendered) throws IOException {
        Path file = repositoryRoot().resolve(relative);
        if ("1".equals(System.getenv("BLOCKNODE_WRITE_DOCS"))) {
            Files.createDirectories(file.getParent());
            Files.writeString(file, rendered, StandardCharsets.UTF_8);
            return;
        }
        String current = Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
        if (!current.equals(rendered)) {
            fail(relative + " is stale: it differs from what the code renders now; run `make docs` and commit it."
                    + firstDifference(current, rendered));
        }
    }

    /**
     * Like {@link #check}, for a generated block inside a page that is otherwise written by hand: the text between
     * the line {@code <!-- BEGIN name: ... -->} and the line {@code <!-- END name -->}, both kept as they are.
     */
    public static void checkBlock(String relative, String name, String rendered) throws IOException {
        Path file = repositoryRoot().resolve(relative);
        String page = Files.readString(file, StandardCharsets.UTF_8);
        String beginPrefix = "<!-- BEGIN " + name + ":";
        String end = "<!-- END " + name + " -->\n";
        int begin = page.indexOf(beginPrefix);
        int from = begin < 0 ? -1 : page.indexOf('\n', begin) + 1;
        int to = from <= 0 ? -1 : page.indexOf(end, from);
        if (begin < 0 || to < 0 || page.indexOf(beginPrefix, from) >= 0) {
            fail(relative + " has no generated block \"" + name + "\" (one line starting " + beginPrefix
                    + "..., one line " + end.strip() + ")");
        }
        String current = page.substring(from, to);
        if ("1".equals(System.getenv("BLOCKNODE_WRITE_DOCS"))) {
            Files.writeString(file, page.substring(0, from) + rendered + page.substring(to), StandardCharsets.UTF_8);
            return;
        }
        if (!current.equals(rendered)) {
            fail(relative + "'s block \"" + name + "\" is stale: run `make docs` and commit it."
                    + firstDifference(current, rendered));
        }
    }

    private static String firstDifference(String current, String rendered) {
        String[] a = current.split("\n", -1);
        String[] b = rendered.split("\n", -1);
        for (int i = 0; i < Math.max(a.length, b.length); i++) {
            String x = i < a.length ? a[i] : "<end of file>";
            String y = i < b.length ? b[i] : "<end of file>";
            if (!x.equals(y)) {
                return "\nfirst difference at line " + (i + 1) + ":\n  page: " + x + "\n  code: " + y;
            }
        }
        return "";
    }
}
