/**
 * The csi-sanity tier's process: a test controller and the sanity front, a proxy that lets csi-sanity run
 * its node tests against a node-only plugin. Test tooling outside the plugin: it may use the plugin's classes, and
 * the plugin never uses it.
 */
package dev.blocknode.e2e;
