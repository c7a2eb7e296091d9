package dev.blocknode.faults;

import java.util.Arrays;
import java.util.Optional;

/**
 * Every named step of the volume lifecycle at which a test may kill (or pause) the plugin: the instants
 * after one change to the host and before the next, where a crash must still converge on retry. One list,
 * so that the crash matrix covers all of them and a step nobody reaches any more fails it.
 */
public enum CrashPoint {
    /** The ATTACHING record is written; the transport has not attached yet. */
    STAGE_INTENT_RECORDED("stage.intent-recorded"),
    /** The transport attached the device; the STAGING record naming it is not written yet. */
    STAGE_ATTACHED("stage.attached"),
    /** The STAGING record names the device; nothing is formatted or mounted yet. */
    STAGE_RECORDED("stage.recorded"),
    /** An encrypted volume: luksFormat finished on the blank device; the record does not say so, nothing is open. */
    STAGE_CRYPT_FORMATTED("stage.crypt-formatted"),
    /** An encrypted volume: its dm-crypt mapping is open; the record names it but not the opened device. */
    STAGE_CRYPT_OPENED("stage.crypt-opened"),
    /** mkfs finished on the blank device; the filesystem type is not recorded and nothing is mounted. */
    STAGE_FORMATTED("stage.formatted"),
    /** The filesystem is mounted at the staging path; the record still says STAGING. */
    STAGE_MOUNTED("stage.mounted"),
    /** The record says STAGED; the caller has no answer yet. */
    STAGE_STAGED("stage.staged"),
    /** The publication is recorded; nothing is bound at the target yet. */
    PUBLISH_RECORDED("publish.recorded"),
    /** A read-only block publication: the loop device chosen for it is recorded, not yet bound to the device. */
    PUBLISH_VIEW_RECORDED("publish.view-recorded"),
    /** The read-only loop device is bound over the volume's device; the target is not mounted yet. */
    PUBLISH_VIEW_ATTACHED("publish.view-attached"),
    /** The target is bind-mounted; the caller has no answer yet. */
    PUBLISH_BOUND("publish.bound"),
    /** The target is unmounted but still exists and is still recorded. */
    UNPUBLISH_UNMOUNTED("unpublish.unmounted"),
    /** The read-only loop device of a block publication is detached; the publication is still recorded. */
    UNPUBLISH_VIEW_RELEASED("unpublish.view-released"),
    /** The record says UNSTAGING; nothing is unmounted yet. */
    UNSTAGE_RECORDED("unstage.recorded"),
    /** The staging path is unmounted; the device is not flushed or detached yet. */
    UNSTAGE_UNMOUNTED("unstage.unmounted"),
    /** An encrypted volume: its dm-crypt mapping is closed; the device below is not flushed or detached yet. */
    UNSTAGE_CRYPT_CLOSED("unstage.crypt-closed"),
    /** The transport detached the device; the record is not deleted yet. */
    UNSTAGE_DETACHED("unstage.detached"),
    /** The transport refreshed the device's size; the filesystem is not grown yet. */
    EXPAND_REFRESHED("expand.refreshed"),
    /** The filesystem is grown; the caller has no answer yet. */
    EXPAND_GROWN("expand.grown");

    private final String step;

    CrashPoint(String step) {
        this.step = step;
    }

    /** The name an environment variable uses for this point. */
    public String step() {
        return step;
    }

    public static Optional<CrashPoint> byStep(String step) {
        return Arrays.stream(values()).filter(p -> p.step.equals(step)).findFirst();
    }

    @Override
    public String toString() {
        return step;
    }
}
