package dev.blocknode.volume.kubelet;

import dev.blocknode.os.fd.ConfinedDirectory;
import dev.blocknode.os.fd.OpenedPath;
import dev.blocknode.outcome.VolumeException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class KubeletPathsUnitTest {

    private static final String FIELD = "target_path";

    @TempDir
    Path temp;

    private Path root;
    private Path outside;
    private KubeletPaths paths;

    @BeforeEach
    void createRoot() throws IOException {
        Path base = temp.toRealPath();
        root = base.resolve("kubelet");
        outside = Files.createDirectories(base.resolve("elsewhere"));
        paths = new KubeletPaths(root);
    }

    private VolumeException refused(String raw) {
        VolumeException e = assertThrows(VolumeException.class, () -> paths.confine(FIELD, raw));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        assertTrue(e.getMessage().startsWith(FIELD + " "), e.getMessage());
        return e;
    }

    @Test
    void constructorCreatesTheRoot() {
        assertTrue(Files.isDirectory(root));
        assertEquals(root, paths.root());
    }

    @Test
    void relativeRootIsMadeAbsolute() throws IOException {
        KubeletPaths relative = new KubeletPaths(Path.of("target/kubelet-paths-unit-test/../kubelet-root-unit"));
        try {
            assertTrue(relative.root().isAbsolute());
            assertFalse(relative.root().toString().contains(".."), relative.root().toString());
        } finally {
            Files.deleteIfExists(relative.root());
        }
    }

    @Test
    void pathUnderTheRootIsAccepted() throws VolumeException, IOException {
        Path pods = Files.createDirectories(root.resolve("pods/uid-1/volumes/kubernetes.io~csi/pv-1"));
        assertEquals(pods.resolve("mount"), paths.confine(FIELD, pods.resolve("mount").toString()));
    }

    @Test
    void existingDirectoryUnderTheRootIsAccepted() throws VolumeException, IOException {
        Path dir = Files.createDirectories(root.resolve("plugins/x/globalmount"));
        assertEquals(dir, paths.confine(FIELD, dir.toString()));
    }

    @Test
    void pathUnderNotYetExistingDirectoriesIsAccepted() throws VolumeException {
        Path deep = root.resolve("pods/new-uid/volumes/kubernetes.io~csi/pv/mount");
        assertEquals(deep, paths.confine(FIELD, deep.toString()));
        assertFalse(Files.exists(root.resolve("pods")), "confine must not create anything");
    }

    @Test
    void redundantSlashesAreNormalized() throws VolumeException {
        assertEquals(root.resolve("a/b"), paths.confine(FIELD, root + "//a///b/"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"relative/path", "pods/x", "", "~/x"})
    void relativePathIsRefused(String raw) {
        VolumeException e = refused(raw);
        assertTrue(e.getMessage().contains("absolute"), e.getMessage());
    }

    @Test
    void nulIsRefused() {
        VolumeException e = refused(root + "/pods/a\0b");
        assertTrue(e.getMessage().contains("NUL"), e.getMessage());
    }

    @Test
    void dotDotIsRefusedEvenWhenItStaysInside() {
        refused(root + "/pods/../pods/x");
        VolumeException e = refused(root + "/../elsewhere/x");
        assertTrue(e.getMessage().contains("\"..\""), e.getMessage());
        refused(root + "/pods/x/..");
    }

    @Test
    void dotIsRefused() {
        refused(root + "/./pods/x");
        refused(root + "/pods/.");
    }

    @Test
    void namesMerelyContainingDotsAreFine() throws VolumeException {
        assertEquals(root.resolve("..pods/...x/.hidden"), paths.confine(FIELD, root + "/..pods/...x/.hidden"));
    }

    @Test
    void pathOutsideTheRootIsRefused() {
        VolumeException e = refused(outside.resolve("x").toString());
        assertTrue(e.getMessage().contains("outside the kubelet root"), e.getMessage());
        refused("/etc/passwd");
        refused("/");
    }

    @Test
    void siblingWithTheRootAsPrefixIsRefused() {
        // "kubelet-evil" starts with the characters of "kubelet" but is not under it.
        refused(root + "-evil/pods/x");
    }

    @Test
    void theRootItselfIsRefused() {
        refused(root.toString());
        refused(root + "/");
    }

    /**
     * A path whose string passes, refused when it is opened (beneath the root, no symlink followed), by
     * every way of opening it and with both resolutions (openat2, and the walk of kernels before 5.6); and
     * nothing is created outside.
     */
    private void refusedWhenOpened(String raw) throws IOException, VolumeException {
        Path confined = paths.confine(FIELD, raw);
        for (ConfinedDirectory.Resolution resolution : ConfinedDirectory.Resolution.values()) {
            KubeletPaths opener = new KubeletPaths(root, resolution);
            List<Executable> opens = List.of(
                    () -> opener.openDirectoryCreating(FIELD, confined).close(),
                    () -> opener.openParentCreating(FIELD, confined).close(),
                    () -> refuseLink(opener.openIfPresent(FIELD, confined)),
                    () -> refuseLink(opener.openParentIfPresent(FIELD, confined)));
            for (Executable open : opens) {
                VolumeException e = assertThrows(VolumeException.class, open, resolution + ": " + raw);
                assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
                assertTrue(e.getMessage().startsWith(FIELD + " ") && e.getMessage().contains("symlink"),
                        e.getMessage());
            }
        }
        try (var left = Files.list(outside)) {
            assertEquals(List.of(), left.toList(), "created outside the root");
        }
    }

    /** What a caller does with an opened path whose last element is a link: refuse it. */
    private static void refuseLink(java.util.Optional<OpenedPath> opened) throws VolumeException {
        if (opened.isEmpty()) {
            return;
        }
        try (OpenedPath path = opened.get()) {
            if (path.stat().isSymlink()) {
                throw KubeletPaths.symlinkRefused(FIELD, path.shown());
            }
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void symlinkedAncestorPointingOutsideIsRefused() throws IOException, VolumeException {
        Path pods = Files.createDirectories(root.resolve("pods"));
        Files.createSymbolicLink(pods.resolve("evil"), outside);
        refusedWhenOpened(pods.resolve("evil/mount").toString());
        // also when the path continues through directories that do not exist yet
        refusedWhenOpened(pods.resolve("evil/not/yet/there").toString());
    }

    @Test
    void relativeSymlinkedAncestorPointingOutsideIsRefused() throws IOException, VolumeException {
        Path pods = Files.createDirectories(root.resolve("pods"));
        Files.createSymbolicLink(pods.resolve("up"), Path.of("../../elsewhere"));
        refusedWhenOpened(pods.resolve("up/mount/x").toString());
    }

    @Test
    void leafSymlinkPointingOutsideIsRefused() throws IOException, VolumeException {
        Path pods = Files.createDirectories(root.resolve("pods"));
        Files.createSymbolicLink(pods.resolve("mount"), outside);
        Path confined = paths.confine(FIELD, pods.resolve("mount").toString());
        VolumeException e = assertThrows(VolumeException.class, () -> paths.openDirectoryCreating(FIELD, confined));
        assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        assertThrows(VolumeException.class, () -> refuseLink(paths.openIfPresent(FIELD, confined)));
    }

    @Test
    void leafSymlinkIsRefusedEvenWhenItPointsInside() throws IOException, VolumeException {
        Path pods = Files.createDirectories(root.resolve("pods"));
        Path inside = Files.createDirectories(root.resolve("real"));
        Files.createSymbolicLink(pods.resolve("mount"), inside);
        Path confined = paths.confine(FIELD, pods.resolve("mount").toString());
        assertThrows(VolumeException.class, () -> paths.openDirectoryCreating(FIELD, confined));
    }

    @Test
    void danglingLeafSymlinkIsRefused() throws IOException, VolumeException {
        Path pods = Files.createDirectories(root.resolve("pods"));
        Files.createSymbolicLink(pods.resolve("mount"), outside.resolve("does-not-exist"));
        Path confined = paths.confine(FIELD, pods.resolve("mount").toString());
        assertThrows(VolumeException.class, () -> paths.openDirectoryCreating(FIELD, confined));
        assertTrue(Files.notExists(outside.resolve("does-not-exist")), "created through the link");
    }

    @Test
    void danglingSymlinkedAncestorIsRefused() throws IOException, VolumeException {
        Path pods = Files.createDirectories(root.resolve("pods"));
        Files.createSymbolicLink(pods.resolve("gone"), outside.resolve("does-not-exist"));
        refusedWhenOpened(pods.resolve("gone/mount").toString());
    }

    @Test
    void symlinkedAncestorIsRefusedEvenWhenItPointsInside() throws IOException, VolumeException {
        Path real = Files.createDirectories(root.resolve("real-pods"));
        Files.createSymbolicLink(root.resolve("pods"), real);
        refusedWhenOpened(root.resolve("pods/uid/mount").toString());
    }

    @Test
    void openedPathsAreCreatedBeneathTheRoot() throws IOException, VolumeException {
        for (ConfinedDirectory.Resolution resolution : ConfinedDirectory.Resolution.values()) {
            KubeletPaths opener = new KubeletPaths(root, resolution);
            Path deep = paths.confine(FIELD, root.resolve(resolution + "/a/b/mount").toString());
            try (OpenedPath parent = opener.openParentCreating(FIELD, deep)) {
                assertTrue(parent.stat().isDirectory());
            }
            assertTrue(Files.isDirectory(root.resolve(resolution + "/a/b")));
            assertTrue(Files.notExists(deep), "only the parent was asked for");
            try (OpenedPath leaf = opener.openIfPresent(FIELD, deep.getParent()).orElseThrow()) {
                assertTrue(leaf.stat().isDirectory());
            }
            assertTrue(opener.openIfPresent(FIELD, deep).isEmpty());
        }
    }

    @Test
    void rootThatIsItselfASymlinkWorksThroughBothNames() throws IOException, VolumeException {
        Path realRoot = Files.createDirectories(temp.toRealPath().resolve("data/kubelet"));
        Path linkRoot = Files.createSymbolicLink(temp.toRealPath().resolve("kubelet-link"), realRoot);
        KubeletPaths linked = new KubeletPaths(linkRoot);
        assertEquals(linkRoot.resolve("pods/x"), linked.confine(FIELD, linkRoot + "/pods/x"));
        assertEquals(realRoot.resolve("pods/x"), linked.confine(FIELD, realRoot + "/pods/x"));
        assertThrows(VolumeException.class, () -> linked.confine(FIELD, realRoot.toString()));
        assertThrows(VolumeException.class, () -> linked.confine(FIELD, linkRoot.toString()));
    }

    @Test
    void pathLongerThan4096CharactersIsRefused() {
        String raw = root + "/" + "a".repeat(4097 - root.toString().length() - 1);
        assertEquals(4097, raw.length());
        VolumeException e = refused(raw);
        assertTrue(e.getMessage().contains("4096"), e.getMessage());
        assertTrue(e.getMessage().length() < 400, "message quotes the whole path");
    }

    @Test
    void pathOf4096CharactersPassesTheLengthCheck() {
        // Split into 200-character names so that no single name is over NAME_MAX.
        StringBuilder raw = new StringBuilder(root.toString());
        while (4096 - raw.length() > 250) {
            raw.append('/').append("b".repeat(200));
        }
        int last = 4096 - raw.length() - 1;
        raw.append('/').append("c".repeat(last));
        assertEquals(4096, raw.length());
        assertEquals(Path.of(raw.toString()), assertDoesNotThrowVolume(raw.toString()));
    }

    private Path assertDoesNotThrowVolume(String raw) {
        try {
            return paths.confine(FIELD, raw);
        } catch (VolumeException e) {
            throw new AssertionError("refused: " + e.getMessage(), e);
        }
    }

    @Test
    void pathLongerThan4096BytesIsRefused() {
        StringBuilder raw = new StringBuilder(root.toString());
        for (int i = 0; i < 20; i++) {
            raw.append('/').append("\u20ac".repeat(70));
        }
        assertTrue(raw.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 4096);
        refused(raw.toString());
    }

    @Test
    void fieldNameAppearsInEveryError() {
        for (String raw : new String[]{"rel", root + "/a\0", root + "/../x", "/etc", root.toString()}) {
            VolumeException e = assertThrows(VolumeException.class, () -> paths.confine("staging_target_path", raw));
            assertTrue(e.getMessage().startsWith("staging_target_path "), e.getMessage());
            assertEquals(VolumeException.Outcome.INVALID_ARGUMENT, e.outcome());
        }
    }

    @Test
    void controlCharactersAreNotEchoedIntoTheMessage() {
        VolumeException e = refused("/etc/\u001b[31mred\nline");
        assertFalse(e.getMessage().contains("\u001b"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }
}
