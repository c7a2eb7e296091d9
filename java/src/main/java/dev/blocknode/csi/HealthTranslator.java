package dev.blocknode.csi;

import dev.blocknode.csi.v1.NodeGetStorageHealthResponse;
import dev.blocknode.csi.v1.StorageHealthErrorType;
import dev.blocknode.csi.v1.VolumeHealth;
import dev.blocknode.csi.v1.VolumeHealthErrorType;
import dev.blocknode.volume.read.HealthProblem;
import dev.blocknode.volume.read.StorageProblem;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The volume layer's health findings as CSI 1.13's VolumeHealth and StorageBackendHealth messages. Messages are
 * cut to {@value #MAX_MESSAGE_BYTES} bytes: kubelet copies them into the pod's status and the CSINode object,
 * whose API rejects a longer one, and a rejected status update would lose every other change it carried.
 */
final class HealthTranslator {

    static final int MAX_MESSAGE_BYTES = 1024;

    private HealthTranslator() {
    }

    static VolumeHealth volumeHealth(String volumeId, List<HealthProblem> problems) {
        VolumeHealth.Builder health = VolumeHealth.newBuilder().setVolumeId(volumeId);
        for (HealthProblem problem : problems) {
            health.addHealthStatuses(VolumeHealth.VolumeHealthEntry.newBuilder()
                    .setStatus(switch (problem.kind().severity()) {
                        case DEGRADED -> VolumeHealthErrorType.DEGRADED;
                        case INACCESSIBLE -> VolumeHealthErrorType.INACCESSIBLE;
                    })
                    .setReason(problem.kind().reason())
                    .setMessage(bounded(problem.message())));
        }
        return health.build();
    }

    /** At most MAX_MESSAGE_BYTES of UTF-8, cut at a character boundary, with an ellipsis when cut. */
    static String bounded(String message) {
        if (message.getBytes(StandardCharsets.UTF_8).length <= MAX_MESSAGE_BYTES) {
            return message;
        }
        String ellipsis = "...";
        int budget = MAX_MESSAGE_BYTES - ellipsis.length();
        StringBuilder out = new StringBuilder();
        int used = 0;
        for (int i = 0; i < message.length(); ) {
            int codePoint = message.codePointAt(i);
            int bytes = new String(Character.toChars(codePoint)).getBytes(StandardCharsets.UTF_8).length;
            if (used + bytes > budget) {
                break;
            }
            out.appendCodePoint(codePoint);
            used += bytes;
            i += Character.charCount(codePoint);
        }
        return out.append(ellipsis).toString();
    }

    static NodeGetStorageHealthResponse storageHealth(List<StorageProblem> problems) {
        NodeGetStorageHealthResponse.Builder response = NodeGetStorageHealthResponse.newBuilder();
        for (StorageProblem problem : problems) {
            response.addBackendHealth(NodeGetStorageHealthResponse.StorageBackendHealth.newBuilder()
                    .setStatus(switch (problem.severity()) {
                        case DEGRADED -> StorageHealthErrorType.STORAGE_DEGRADED;
                        case UNREACHABLE -> StorageHealthErrorType.STORAGE_UNREACHABLE;
                    })
                    .setReason(problem.reason())
                    .setMessage(bounded(problem.message())));
        }
        return response.build();
    }
}
