// Package harness holds what the Go test harnesses of the sidecar tiers (test-e2e/liveness,
// test-e2e/registration) share: counting and printing checks, and starting, stopping and waiting for the
// child processes they test. Each harness imports it through a replace directive in its go.mod, so it
// builds offline. Standard library only.
package harness

import "fmt"

// Checks counts a harness's checks and prints one line for each, in the form run.sh and the READMEs show.
type Checks struct {
	Passed, Failed int
}

func (c *Checks) Pass(name, detail string) {
	c.Passed++
	fmt.Printf("PASS  %-44s %s\n", name, detail)
}

func (c *Checks) Fail(name string, err error) {
	c.Failed++
	fmt.Printf("FAIL  %-44s %v\n", name, err)
}

// Check records err as the outcome of name and reports whether it passed.
func (c *Checks) Check(name string, err error, detail string) bool {
	if err != nil {
		c.Fail(name, err)
		return false
	}
	c.Pass(name, detail)
	return true
}

// Finish prints the closing line, "<harness>: N passed, M failed", and returns the exit code: code, or 1
// where a check failed and code says nothing worse.
func (c *Checks) Finish(harness string, code int) int {
	fmt.Printf("\n%s: %d passed, %d failed\n", harness, c.Passed, c.Failed)
	if c.Failed > 0 && code == 0 {
		return 1
	}
	return code
}
