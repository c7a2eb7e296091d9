/**
 * A blocking CSI client on a Unix socket, for the demo, {@code blocknode client} and the test tiers. It uses
 * only the generated CSI types and gRPC, so every caller outside the plugin can share it without reaching in.
 */
package dev.blocknode.csi.client;
