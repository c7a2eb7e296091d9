package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The cases the Java KeyFormatsUnitTest runs too: Go's RE2 must answer as java.util.regex does.
func TestKeyFormatsAgreeWithJava(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "keyformats-cases.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cells := strings.Split(line, "\t")
		if len(cells) != 3 {
			t.Fatalf("not format<TAB>value<TAB>verdict: %q", line)
		}
		seen[cells[0]] = true
		if got, want := format(cells[0]).accepts(cells[1]), cells[2] == "ok"; got != want {
			t.Errorf("%s %q: accepted %v, the plugin says %v", cells[0], cells[1], got, want)
		}
	}
	for name := range keyFormats {
		if !seen[name] {
			t.Errorf("format %s has no case", name)
		}
	}
}
