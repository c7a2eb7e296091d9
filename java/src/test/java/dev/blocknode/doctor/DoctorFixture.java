package dev.blocknode.doctor;

import dev.blocknode.os.HostPaths;
import dev.blocknode.os.host.KernelFeatures;
import dev.blocknode.testing.FakeSysfs;
import dev.blocknode.testing.ScriptedCommandRunner;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A fabricated host for the doctor's checks: /sys, /dev, /proc, /etc and lib/modules under a temp dir
 * ({@link FakeSysfs}), scripted tools, and kernel features answered as the test says.
 */
final class DoctorFixture {

    final FakeSysfs host;
    final ScriptedCommandRunner commands = new ScriptedCommandRunner();
    final Map<KernelFeatures.Feature, String> missingFeatures = new EnumMap<>(KernelFeatures.Feature.class);
    /** Whose tools the doctor runs: the image's, as in the plugin's container, unless a test says otherwise. */
    ToolOwner tools = ToolOwner.IMAGE;

    DoctorFixture(Path temp) throws IOException {
        this.host = new FakeSysfs(temp);
        unixSockets(); // none listening
    }

    HostPaths paths() {
        return host.paths();
    }

    KernelFeatures features() {
        return feature -> Optional.ofNullable(missingFeatures.get(feature));
    }

    /** /proc/net/unix with these abstract sockets listening (and an unnamed one, which has no path column). */
    DoctorFixture unixSockets(String... names) throws IOException {
        StringBuilder text = new StringBuilder("Num       RefCount Protocol Flags    Type St Inode Path\n");
        text.append("0000000000000000: 00000003 00000000 00000000 0001 03 17050\n");
        for (String name : names) {
            text.append("0000000000000000: 00000002 00000000 00010000 0001 01 18122 ").append(name).append('\n');
        }
        return file(paths().unixSockets(), text.toString());
    }

    DoctorFixture file(Path file, String content) throws IOException {
        Files.createDirectories(file.getParent());
        Files.writeString(file, content);
        return this;
    }

    DoctorFixture etc(String relative, String content) throws IOException {
        return file(paths().etc().resolve(relative), content);
    }

    DoctorFixture sys(String relative, String content) throws IOException {
        return file(paths().sys().resolve(relative), content);
    }

    /** A process of this pid namespace named {@code comm}. */
    DoctorFixture process(int pid, String comm) throws IOException {
        return file(paths().proc().resolve(pid + "/comm"), comm + "\n");
    }

    DoctorReport examine() {
        return new Doctor(paths(), commands, features(), Doctor.DEFAULT_REPAIR_INTERVAL, tools)
                .examine(Optional.empty());
    }

    TransportReadiness examine(String transport) {
        return examine(transport, Doctor.DEFAULT_REPAIR_INTERVAL);
    }

    /** The transport's readiness for a plugin with this --repair-interval. */
    TransportReadiness examine(String transport, java.time.Duration repairInterval) {
        DoctorReport report = new Doctor(paths(), commands, features(), repairInterval, tools)
                .examine(Optional.empty());
        commands.assertAllConsumed();
        return report.transports().stream().filter(t -> t.transport().equals(transport)).findFirst().orElseThrow();
    }

    static Finding finding(TransportReadiness transport, String check) {
        List<Finding> found = transport.findings().stream().filter(f -> f.check().equals(check)).toList();
        assertEquals(1, found.size(), () -> "one " + check + " finding in " + transport);
        return found.getFirst();
    }

    static Finding assertFinding(TransportReadiness transport, String check, Severity severity, String... words) {
        Finding finding = finding(transport, check);
        assertEquals(severity, finding.severity(), finding::toString);
        for (String word : words) {
            assertTrue(finding.message().contains(word), () -> "\"" + word + "\" in " + finding);
        }
        assertEquals(severity == Severity.OK, finding.fix().isEmpty(), () -> "a fix exactly for a problem: " + finding);
        return finding;
    }
}
