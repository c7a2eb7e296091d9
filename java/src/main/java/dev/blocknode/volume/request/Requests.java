package dev.blocknode.volume.request;


import dev.blocknode.outcome.Secrets;

import java.util.Map;
import java.util.Optional;

/**
 * Node requests after the csi layer has checked that every required field is present. Paths are still
 * as the caller wrote them: the volume layer confines them to the kubelet root.
 */
public final class Requests {

    private Requests() {
    }

    public record Stage(String volumeId, String stagingPath, VolumeCapability capability,
                        Map<String, String> volumeContext, Map<String, String> publishContext, Secrets secrets) {
    }

    public record Unstage(String volumeId, String stagingPath) {
    }

    public record Publish(String volumeId, String stagingPath, String targetPath, VolumeCapability capability,
                          boolean readonly) {
    }

    public record Unpublish(String volumeId, String targetPath) {
    }

    /**
     * requiredBytes and limitBytes are 0 when not given; secrets are the node-expand secret's (CSI 1.5), which only an
     * encrypted volume uses.
     */
    public record Expand(String volumeId, String volumePath, String stagingPath, long requiredBytes,
                         long limitBytes, Optional<VolumeCapability> capability, Secrets secrets) {
    }

    public record Stats(String volumeId, String volumePath, String stagingPath) {
    }

    /** publishPath and stagingPath are empty when not given (both are optional hints). */
    public record Health(String volumeId, String publishPath, String stagingPath) {
    }
}
