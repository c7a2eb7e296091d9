package dev.blocknode.os.natives;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Runs {@link NativeLibraryProbe} in a fresh JVM: the only way to test loading more than once. */
final class ForkedJvm {

    private ForkedJvm() {
    }

    record Outcome(int exitCode, String output, Map<String, String> values) {
        String get(String key) {
            if (!values.containsKey(key)) {
                throw new AssertionError("probe printed no " + key + "; output:\n" + output);
            }
            return values.get(key);
        }
    }

    /**
     * @param prefix    command words before java (e.g. setpriv ...), may be empty
     * @param jvmArgs   e.g. -D options
     * @param probeArgs arguments of NativeLibraryProbe.main
     */
    static Outcome probe(List<String> prefix, List<String> jvmArgs, String... probeArgs) throws IOException {
        List<String> command = new ArrayList<>(prefix);
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("--enable-native-access=ALL-UNNAMED");
        command.addAll(jvmArgs);
        command.add("-cp");
        // target/classes (the library resource included) and target/test-classes: nothing else.
        command.add(codeSource(NativeLibrary.class) + java.io.File.pathSeparator + codeSource(NativeLibraryProbe.class));
        command.add(NativeLibraryProbe.class.getName());
        command.addAll(List.of(probeArgs));
        Commands.Result result = Commands.runAllowingFailure(command);
        Map<String, String> values = new LinkedHashMap<>();
        for (String line : result.output().split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                values.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        return new Outcome(result.exitCode(), result.output(), values);
    }

    private static String codeSource(Class<?> type) {
        try {
            return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
