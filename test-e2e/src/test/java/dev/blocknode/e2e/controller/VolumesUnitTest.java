package dev.blocknode.e2e.controller;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** CreateVolume's parameters reach the volume_context beside the backend's keys, never in their place. */
class VolumesUnitTest {

    /** Exposes every file as "lun" 7; records what it withdrew. */
    private static final class FixedBackend implements VolumeBackend {
        final List<Path> withdrawn = new ArrayList<>();

        @Override
        public String name() {
            return "fixed";
        }

        @Override
        public Placement expose(String volumeId, Path file, long bytes) {
            return new Placement("lun 7", Map.of("lun", "7"));
        }

        @Override
        public Placement grow(Placement placement, Path file, long bytes) {
            return placement;
        }

        @Override
        public void withdraw(Placement placement, Path file) {
            withdrawn.add(file);
        }
    }

    @Test
    void passesParametersOnInTheVolumeContext(@TempDir Path dir) throws IOException {
        Volumes volumes = new Volumes(dir, new FixedBackend());

        Volumes.Volume volume = volumes.create("a", 1 << 20, true, Map.of("encryption", "luks2"));

        assertEquals(Map.of("lun", "7", "encryption", "luks2"), volume.volumeContext());
        assertEquals(volume.volumeContext(), volumes.expand(volume.id(), 2 << 20).volumeContext(),
                "a grown volume keeps its parameters");
    }

    @Test
    void refusesAParameterThatWouldRedirectTheNodeAndLeavesNothing(@TempDir Path dir) throws IOException {
        FixedBackend backend = new FixedBackend();
        Volumes volumes = new Volumes(dir, backend);

        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> volumes.create("a", 1 << 20, true, Map.of("lun", "9")));

        assertTrue(e.getMessage().contains("[lun]"), e.getMessage());
        assertEquals(1, backend.withdrawn.size());
        assertTrue(volumes.all().isEmpty());
        try (var left = Files.list(dir.toRealPath())) {
            assertEquals(0, left.count());
        }
    }
}
