/**
 * make bench's figures and make soak's cycles (test-e2e/soak/src shares this package): the plugin run as a
 * separate process and measured from outside, each figure a ratio to a baseline of the same run. Built by their
 * own scripts, not by Maven; make test compiles them (compile-harnesses) so that they keep up with the plugin.
 */
package dev.blocknode.bench;
