/**
 * The bottom of the plugin: VolumeException, whose Outcome the csi layer maps to a gRPC code, and Secrets,
 * which cannot be printed. Every layer may throw or carry them, and they use nothing, so no layer needs another
 * just to report a failure.
 */
package dev.blocknode.outcome;
