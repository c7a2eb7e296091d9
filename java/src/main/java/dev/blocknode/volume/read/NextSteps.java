package dev.blocknode.volume.read;

/**
 * What an operator does next about each problem {@code blocknode status} shows, in one line: status reads only the
 * state directory and the host, so where it cannot tell what went wrong, the step says where to look (the plugin's
 * log for a call of the volume, {@code blocknode doctor} for the node) and what makes kubelet act (deleting the pod).
 */
public final class NextSteps {

    static final String STAGE_INCOMPLETE = "check the plugin's log for NodeStageVolume of this volume; kubelet"
            + " retries it while a pod wants the volume (delete the pod to have it unstaged instead), and a starting"
            + " plugin finishes or undoes one it cut short";
    static final String UNSTAGE_INCOMPLETE = "check the plugin's log for NodeUnstageVolume of this volume (it names"
            + " what holds it: a publication still mounted, a device in use); kubelet retries it";
    static final String DEVICE_GONE = "check that the storage still presents the LUN to this node, and run blocknode"
            + " doctor; delete the pod to have kubelet unstage the volume";
    static final String EARLIER_BOOT = "kubelet stages the volume again for its pod; if it does not, check the"
            + " plugin's log for NodeStageVolume of this volume";
    static final String PATHS = "check the storage and the network to it, and run blocknode doctor; the plugin's"
            + " repair loop brings paths back as they return (its log: path repair)";
    static final String STAGING_MOUNT_MISSING = "check the plugin's log for this volume, then delete the pod: kubelet"
            + " unstages the volume and stages it again for the pod's replacement";
    static final String PUBLICATION_MISSING = "delete the pod: kubelet publishes the volume again for the pod's"
            + " replacement";
    public static final String RECORD_UNREADABLE = "repair the file or move it out of the state directory (the plugin"
            + " refuses its volume until then); see Operations, staging records";
    static final String UNRECORDED_STAGING_MOUNT = "delete the pod that uses it: kubelet's NodeUnstageVolume releases"
            + " it; with no such pod, unmount it by hand";
    static final String UNRECORDED_MOUNT = "unmount it by hand once nothing uses it";
    public static final String LEFTOVERS_KEPT = "if the line names a failure, run blocknode doctor (the plugin tries"
            + " again by itself); if something uses it, remove it by hand once nothing does (Operations: sweeping"
            + " leftovers)";

    private NextSteps() {
    }
}
