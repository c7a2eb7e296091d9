package harness

import (
	"errors"
	"testing"
)

func TestFinishTurnsAFailedCheckIntoExitCode1(t *testing.T) {
	var passing, failing Checks
	if !passing.Check("passes", nil, "") || failing.Check("fails", errors.New("no"), "") {
		t.Fatal("Check should report whether its check passed")
	}
	for _, c := range []struct {
		what       string
		checks     *Checks
		code, want int
	}{
		{"all passed", &passing, 0, 0},
		{"all passed, the harness failed otherwise", &passing, 2, 2},
		{"a check failed", &failing, 0, 1},
		{"a check failed and the harness could not go on", &failing, 2, 2},
	} {
		if got := c.checks.Finish("test", c.code); got != c.want {
			t.Errorf("%s: exit code %d, want %d", c.what, got, c.want)
		}
	}
}
