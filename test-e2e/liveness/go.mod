module blocknode/test-e2e/liveness

go 1.26.0
