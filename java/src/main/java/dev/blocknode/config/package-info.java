/**
 * The plugin's settings as its flags give them, parsed strictly so that a typo stops the start instead of
 * changing behaviour. A utility below every layer: it may use only logging (for --log-format and --log-level).
 */
package dev.blocknode.config;
