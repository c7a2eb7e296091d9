package dev.blocknode.csi;

import dev.blocknode.csi.v1.StorageHealthErrorType;
import dev.blocknode.csi.v1.VolumeHealth;
import dev.blocknode.csi.v1.VolumeHealthErrorType;
import dev.blocknode.volume.read.HealthProblem;
import dev.blocknode.volume.read.StorageProblem;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Severity and reason as kubelet reads them; messages short enough for the pod status API to accept. */
class HealthTranslatorUnitTest {

    @Test
    void eachProblemBecomesAnEntryWithItsSeverityAndReason() {
        VolumeHealth health = HealthTranslator.volumeHealth("vol-1", List.of(
                new HealthProblem(HealthProblem.Kind.FILESYSTEM_READ_ONLY, "read-only"),
                new HealthProblem(HealthProblem.Kind.NO_PATH_SERVING, "no path")));

        assertEquals("vol-1", health.getVolumeId());
        assertEquals(VolumeHealthErrorType.DEGRADED, health.getHealthStatuses(0).getStatus());
        assertEquals("FilesystemReadOnly", health.getHealthStatuses(0).getReason());
        assertEquals(VolumeHealthErrorType.INACCESSIBLE, health.getHealthStatuses(1).getStatus());
        assertEquals("NoPathServing", health.getHealthStatuses(1).getReason());
        assertEquals(0, HealthTranslator.volumeHealth("vol-1", List.of()).getHealthStatusesCount());
    }

    @Test
    void storageProblemsBecomeBackendHealth() {
        var response = HealthTranslator.storageHealth(List.of(
                new StorageProblem(StorageProblem.Severity.UNREACHABLE, "IscsiUnreachable", "none serves")));
        assertEquals(StorageHealthErrorType.STORAGE_UNREACHABLE, response.getBackendHealth(0).getStatus());
        assertEquals("IscsiUnreachable", response.getBackendHealth(0).getReason());
    }

    @Test
    void aLongMessageIsCutAtACharacterBoundaryWithinTheApisLimit() {
        String shortOne = "the filesystem is read-only";
        assertSame(shortOne, HealthTranslator.bounded(shortOne));

        String multiByte = "ü".repeat(600); // 1,200 bytes
        String cut = HealthTranslator.bounded(multiByte);
        assertTrue(cut.getBytes(StandardCharsets.UTF_8).length <= HealthTranslator.MAX_MESSAGE_BYTES, cut);
        assertTrue(cut.endsWith("..."), cut);
        assertTrue(cut.substring(0, cut.length() - 3).chars().allMatch(c -> c == 'ü'), "no half character");
    }
}
