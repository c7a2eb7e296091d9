package dev.blocknode.doctor;

import dev.blocknode.os.host.KernelFeatures.Feature;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import static dev.blocknode.doctor.DoctorFixture.assertFinding;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The kernel checks: the native library, the features with fallbacks, and the kubelet root's propagation. */
class DoctorKernelUnitTest {

    @TempDir
    Path temp;

    private DoctorFixture node;

    @BeforeEach
    void host() throws Exception {
        node = new DoctorFixture(Files.createDirectories(temp.resolve("host")));
    }

    private TransportReadiness kernel(Optional<Path> kubeletRoot) {
        DoctorReport report = new Doctor(node.paths(), node.commands, node.features()).examine(kubeletRoot);
        return report.transports().stream().filter(t -> t.transport().equals(TransportReadiness.KERNEL))
                .findFirst().orElseThrow();
    }

    @Test
    void everyFeatureThereIsOk() {
        TransportReadiness kernel = kernel(Optional.empty());
        assertTrue(kernel.notSetUp().isEmpty(), "the kernel is always checked");
        for (String check : new String[]{"native-library", "openat2", "mount-setattr", "uevent-socket"}) {
            assertFinding(kernel, check, Severity.OK);
        }
        assertEquals(4, kernel.findings().size(), "no kubelet root given, none checked");
    }

    @Test
    void aMissingFeatureIsAWarningNamingTheFallback() {
        node.missingFeatures.put(Feature.MOUNT_SETATTR, "the kernel answers ENOSYS to mount_setattr (Linux 5.12)");
        node.missingFeatures.put(Feature.UEVENT_SOCKET, "the netlink uevent socket cannot be opened: EPERM");
        TransportReadiness kernel = kernel(Optional.empty());
        assertFinding(kernel, "mount-setattr", Severity.WARNING, "ENOSYS", "moved into place");
        assertFinding(kernel, "uevent-socket", Severity.WARNING, "EPERM", "poll");
        assertFinding(kernel, "openat2", Severity.OK);
        assertEquals(Severity.WARNING, kernel.worst());
    }

    @Test
    void withoutTheNativeLibraryNothingElseIsAsked() {
        node.missingFeatures.put(Feature.NATIVE_LIBRARY, "the native library cannot be loaded: noexec /tmp");
        TransportReadiness kernel = kernel(Optional.empty());
        assertFinding(kernel, "native-library", Severity.ERROR, "noexec");
        assertEquals(1, kernel.findings().size());
    }

    private Path kubeletRootOnAMount(String optionalFields) throws Exception {
        Path root = Files.createDirectories(temp.resolve("var/lib/kubelet")).toRealPath();
        Path mountPoint = root.getParent();
        node.file(node.paths().mountInfo(), "21 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
                + "88 21 0:52 / " + mountPoint + " rw,relatime " + optionalFields + " - tmpfs tmpfs rw\n");
        return root;
    }

    @Test
    void aKubeletRootOnASharedMountIsOk() throws Exception {
        Path root = kubeletRootOnAMount("shared:7 master:1");
        assertFinding(kernel(Optional.of(root)), "kubelet-root", Severity.OK, "shared", root.getParent().toString());
    }

    @Test
    void aKubeletRootOnAPrivateOrSlaveMountIsAnError() throws Exception {
        Path root = kubeletRootOnAMount("master:1");
        Finding finding = assertFinding(kernel(Optional.of(root)), "kubelet-root", Severity.ERROR, "not shared");
        assertTrue(finding.fix().contains("Bidirectional"), finding::fix);
    }

    @Test
    void aMissingKubeletRootOrAFileIsAnError() throws Exception {
        assertFinding(kernel(Optional.of(temp.resolve("nowhere"))), "kubelet-root", Severity.ERROR, "does not exist");
        Path file = Files.writeString(temp.resolve("file"), "");
        assertFinding(kernel(Optional.of(file)), "kubelet-root", Severity.ERROR, "not a directory");
    }
}
