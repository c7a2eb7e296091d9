package dev.blocknode;

import dev.blocknode.testing.GeneratedDocs;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A test class's name says its tier, in every Maven module: {@code *HostTest} carries {@code @Tag("host")} (root,
 * the kernel, host tools: {@code make host}), {@code *UnitTest} does not (the JVM alone: {@code make unit}). The
 * tag is what the tiers select by; the name is what a contributor reads, so the two must agree.
 */
class TestNamesUnitTest {

    private static final List<String> MODULES = List.of("native", "java", "test-e2e");
    private static final Pattern HOST_TAG = Pattern.compile("(?m)^\\s*@Tag\\(\"host\"\\)");
    /** A class with test methods: JUnit's annotations, not helpers such as fakes and fixtures. */
    private static final Pattern TEST_METHOD = Pattern.compile("(?m)^\\s*@(Test|ParameterizedTest|RepeatedTest|TestFactory)\\b");

    @Test
    void everyTestClassIsNamedByItsTier() throws IOException {
        List<String> wrong = new ArrayList<>();
        int checked = 0;
        for (String module : MODULES) {
            Path tests = GeneratedDocs.repositoryRoot().resolve(module).resolve("src/test/java");
            try (Stream<Path> files = Files.walk(tests)) {
                for (Path file : files.filter(f -> f.toString().endsWith(".java")).sorted().toList()) {
                    String source = Files.readString(file);
                    if (!TEST_METHOD.matcher(source).find()) {
                        continue;
                    }
                    checked++;
                    String name = file.getFileName().toString().replace(".java", "");
                    boolean host = HOST_TAG.matcher(source).find();
                    String expected = host ? "HostTest" : "UnitTest";
                    if (!name.endsWith(expected)) {
                        wrong.add(module + "/" + tests.relativize(file) + ": " + (host ? "tagged" : "not tagged")
                                + " \"host\", so its name ends in " + expected);
                    }
                }
            }
        }
        assertTrue(checked > 100, "found only " + checked + " test classes: is the repository root right?");
        assertEquals(List.of(), wrong);
    }
}
