package dev.blocknode.os.block;

/**
 * How device-mapper names one of its devices: {@code name} as in /dev/mapper, {@code uuid} as its creator set it
 * (empty when none did), the one that says what made the map.
 */
public record DeviceMapperId(String name, String uuid) {
}
