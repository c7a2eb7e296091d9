/**
 * The plugin's Prometheus series and the endpoint that serves them. Series are recorded into Micrometer's
 * global registry so that deep layers time their phases without a registry handed down. A utility that uses no
 * layer; docs/reference/metrics.md is generated from a scrape (make docs).
 */
package dev.blocknode.metrics;
