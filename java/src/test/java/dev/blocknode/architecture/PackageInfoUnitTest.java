package dev.blocknode.architecture;

import dev.blocknode.testing.GeneratedDocs;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every package of the plugin, its JNI module and the test tiers' Java sources has a package-info.java whose
 * Javadoc says what the package is for and what it may use: the sentence a reader needs first, kept beside the
 * code instead of in a design page that drifts. A new package fails here until it has one (and fails
 * ArchitectureUnitTest until it has a layer).
 */
class PackageInfoUnitTest {

    /** Source roots; test-e2e/soak/src shares test-e2e/bench/src's package, so one root's file covers both. */
    private static final List<String> ROOTS = List.of("java/src/main/java", "native/src/main/java",
            "test-e2e/src/main/java", "test-e2e/bench/src", "test-e2e/soak/src");

    @Test
    void everyPackageSaysWhatItIsFor() throws IOException {
        Path repository = GeneratedDocs.repositoryRoot();
        Set<String> packages = new TreeSet<>();
        Set<String> described = new TreeSet<>();
        for (String root : ROOTS) {
            Path base = repository.resolve(root);
            try (Stream<Path> files = Files.walk(base)) {
                for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                    String pkg = base.relativize(file.getParent()).toString().replace('/', '.');
                    packages.add(pkg);
                    if (file.getFileName().toString().equals("package-info.java")) {
                        String text = Files.readString(file);
                        assertTrue(text.startsWith("/**") && text.contains("package " + pkg + ";"),
                                root + "/" + base.relativize(file) + ": a Javadoc comment, then package " + pkg);
                        described.add(pkg);
                    }
                }
            }
        }
        assertTrue(packages.size() > 30, "the walk found the packages: " + packages);
        Set<String> missing = packages.stream().filter(p -> !described.contains(p))
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(Set.of(), missing, "packages without a package-info.java saying what they are for");
    }
}
