/**
 * The plugin's entry points: Main parses the flags and runs one mode, Plugin wires the node side (the
 * transports, the volume lifecycle, the CSI services, health and metrics) and ControllerPlugin the controller side.
 * Wiring happens here and nowhere else, so this package may use every layer and no layer may use it.
 */
package dev.blocknode;
