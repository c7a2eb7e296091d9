package dev.blocknode.csi;

import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.volume.StageRequestRules;

import java.util.List;
import java.util.Optional;

/**
 * A NodeStageVolume request checked as the Node service checks it, without staging anything: its fields (the
 * volume id, the capability, the contexts' bounds and characters), then the volume layer's request rules, every
 * problem of them. For
 * tools that write what kubelet will send ({@code blocknode pv}), so that they refuse what the plugin would.
 */
public final class StageRequestCheck {

    private StageRequestCheck() {
    }

    /**
     * Every problem a stage of {@code request} would meet before any host change: the Node service's field checks
     * (the first of them), then all of the volume layer's (see {@link StageRequestRules#problems}).
     */
    public static StageRequestRules.Findings problems(NodeStageVolumeRequest request, StageRequestRules rules,
                                                      boolean secretNamed) {
        try {
            return rules.problems(NodeService.stageRequest(request), secretNamed);
        } catch (VolumeException e) {
            return new StageRequestRules.Findings(Optional.empty(), List.of(e.getMessage()));
        }
    }
}
