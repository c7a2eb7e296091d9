package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/reference/helm-values.md is what ValuesDoc renders from the chart now. BLOCKNODE_WRITE_DOCS=1 (make docs)
// writes it instead of comparing.
func TestValuesDocIsCurrent(t *testing.T) {
	page, err := ValuesDoc(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join("..", "..", "docs", "reference", "helm-values.md")
	if os.Getenv("BLOCKNODE_WRITE_DOCS") == "1" {
		if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	current, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%s: %v; run make docs", file, err)
	}
	if string(current) != page {
		a, b := strings.Split(string(current), "\n"), strings.Split(page, "\n")
		for i := 0; i < len(a) || i < len(b); i++ {
			x, y := "<end of file>", "<end of file>"
			if i < len(a) {
				x = a[i]
			}
			if i < len(b) {
				y = b[i]
			}
			if x != y {
				t.Fatalf("docs/reference/helm-values.md is stale (run make docs); first difference at line %d:\n  page:  %s\n  chart: %s", i+1, x, y)
			}
		}
	}
}

// Every key of values.yaml has a row, so a new value cannot be left out of the page.
func TestValuesDocListsEveryKey(t *testing.T) {
	page, err := ValuesDoc(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"driverName", "image.repository", "kubeletRoot", "fencing.renewInterval",
		"metrics.port", "sidecars.attacher.image.tag", "controller.enabled", "updateStrategy"} {
		if !strings.Contains(page, "| `"+key+"` |") {
			t.Errorf("no row for %s", key)
		}
	}
}
