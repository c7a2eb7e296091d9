// Figure i's peer harness (test-e2e/bench/README.md, "Figure i"): Dell's gobrick from the Go module proxy.
// The checksum database has no entry for github.com/dell/goiscsi and github.com/dell/gonvme (it answers 404), so
// go.sum, committed, is what checks every later download: a build needs nothing more (go build refuses a module
// whose hash is missing or differs). To move to another version: GONOSUMDB='github.com/dell/*' go get
// github.com/dell/gobrick@vX.Y.Z && go mod tidy, and review the go.sum change.
module blocknode/test-e2e/bench/gobrickattach

go 1.26.0

require github.com/dell/gobrick v1.14.0

require (
	github.com/dell/goiscsi v1.12.0 // indirect
	github.com/dell/gonvme v1.11.0 // indirect
	github.com/golang/mock v1.6.0 // indirect
	github.com/sirupsen/logrus v1.9.3 // indirect
	golang.org/x/sync v0.14.0 // indirect
	golang.org/x/sys v0.29.0 // indirect
)
