package dev.blocknode.config;

import dev.blocknode.logging.Printable;

import java.util.Locale;

/**
 * {@code --mode}: which CSI services this process serves. {@code node} (the DaemonSet on every node) stages and
 * publishes volumes; {@code controller} (one Deployment beside the external-attacher) answers ControllerPublish
 * and ControllerUnpublish, so that Kubernetes tracks which node a volume is attached to and refuses a second.
 */
public enum PluginMode {
    NODE, CONTROLLER;

    public static PluginMode parse(String flag, String value) {
        try {
            return valueOf(value.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--" + flag + " must be node or controller, got \""
                    + Printable.bounded(value, 64) + "\"");
        }
    }
}
