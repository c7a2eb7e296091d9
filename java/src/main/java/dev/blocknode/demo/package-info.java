/**
 * {@code make run}'s demo volume: a loop device staged and published through the plugin's own socket exactly
 * as kubelet would. An entry point: it may use any layer and nothing uses it.
 */
package dev.blocknode.demo;
