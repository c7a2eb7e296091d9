package dev.blocknode.csi;

import dev.blocknode.csi.v1.NodeStageVolumeRequest;
import dev.blocknode.outcome.VolumeException;
import dev.blocknode.volume.StageRequestRules;

/**
 * A NodeStageVolume request checked as the Node service checks it, without staging anything: its fields (the
 * volume id, the capability, the contexts' bounds and characters), then the volume layer's request rules. For
 * tools that write what kubelet will send ({@code blocknode pv}), so that they refuse what the plugin would.
 */
public final class StageRequestCheck {

    private StageRequestCheck() {
    }

    /**
     * @return the name of the transport that would attach the volume
     * @throws VolumeException the error NodeStageVolume would answer, before any host change
     */
    public static String check(NodeStageVolumeRequest request, StageRequestRules rules) throws VolumeException {
        return rules.check(NodeService.stageRequest(request));
    }
}
