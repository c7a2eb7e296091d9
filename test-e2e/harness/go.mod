module blocknode/test-e2e/harness

go 1.26.0
