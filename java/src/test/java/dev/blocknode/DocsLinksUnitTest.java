package dev.blocknode;

import dev.blocknode.testing.GeneratedDocs;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every relative link in README.md, CONTRIBUTING.md, docs/, the README beside deploy/ and the READMEs and run
 * histories (history.md) of the test tiers leads to a file of the repository, and every #anchor to a heading of the
 * page it names (GitHub's slugs). External links are not followed.
 */
class DocsLinksUnitTest {

    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");
    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*)$");

    @Test
    void everyRelativeLinkResolves() throws IOException {
        Path root = GeneratedDocs.repositoryRoot();
        List<Path> pages = new ArrayList<>();
        pages.add(root.resolve("README.md"));
        pages.add(root.resolve("CONTRIBUTING.md"));
        pages.add(root.resolve("deploy/README.md"));
        try (Stream<Path> docs = Files.walk(root.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        try (Stream<Path> tiers = Files.list(root.resolve("test-e2e"))) {
            tiers.flatMap(d -> Stream.of(d.resolve("README.md"), d.resolve("history.md")))
                    .filter(Files::isRegularFile).sorted().forEach(pages::add);
        }
        List<String> broken = new ArrayList<>();
        for (Path page : pages) {
            String text = withoutCode(Files.readString(page));
            Matcher m = LINK.matcher(text);
            while (m.find()) {
                String link = m.group(1);
                if (link.matches("^[a-z]+:.*")) {
                    continue; // http:, https:, mailto:
                }
                int hash = link.indexOf('#');
                String file = hash < 0 ? link : link.substring(0, hash);
                Path target = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
                if (!Files.exists(target)) {
                    broken.add(root.relativize(page) + ": " + link + " (no such file)");
                } else if (hash >= 0 && target.toString().endsWith(".md")
                        && !anchors(target).contains(link.substring(hash + 1))) {
                    broken.add(root.relativize(page) + ": " + link + " (no such heading)");
                }
            }
        }
        assertTrue(broken.isEmpty(), "broken links:\n" + String.join("\n", broken));
    }

    /** The text without fenced code blocks and inline code spans, where a "](" is code, not a link. */
    private static String withoutCode(String text) {
        StringBuilder out = new StringBuilder();
        boolean code = false;
        for (String line : text.split("\n", -1)) {
            if (line.stripLeading().startsWith("```")) {
                code = !code;
                continue;
            }
            if (!code) {
                out.append(line.replaceAll("`[^`]*`", "")).append('\n');
            }
        }
        return out.toString();
    }

    /** GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to dashes, -N for repeats. */
    static Set<String> anchors(Path page) throws IOException {
        Set<String> anchors = new HashSet<>();
        boolean code = false;
        for (String line : Files.readAllLines(page)) {
            if (line.stripLeading().startsWith("```")) {
                code = !code;
            }
            Matcher m = HEADING.matcher(line);
            if (code || !m.matches()) {
                continue;
            }
            String slug = m.group(1).strip().toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N} _-]", "")
                    .replace(' ', '-');
            String unique = slug;
            for (int n = 1; anchors.contains(unique); n++) {
                unique = slug + "-" + n;
            }
            anchors.add(unique);
        }
        return anchors;
    }
}
