/**
 * The CSI wire surface: each service checks its request in the spec's order, turns it into a domain request
 * for volume, and maps the outcome back to a gRPC status in one place (StatusMapper). It reaches the host only
 * through volume, so every rule about paths, devices and records is enforced below it; it may also use csi.server
 * and the utilities.
 */
package dev.blocknode.csi;
