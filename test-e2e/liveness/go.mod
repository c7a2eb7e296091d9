module blocknode/test-e2e/liveness

go 1.26.0

// The harnesses' shared helpers, from this checkout: no download, no checksum.
require blocknode/test-e2e/harness v0.0.0

replace blocknode/test-e2e/harness => ../harness
