/**
 * The plugin's settings as its flags give them, parsed strictly so that a typo stops the start instead of
 * changing behaviour. For the entry points alone; it may use logging (for --log-format and --log-level) and the
 * setting types of os's own mechanisms (os.wait's DeviceWaitMode, for --device-wait), so that os reads no flag.
 */
package dev.blocknode.config;
