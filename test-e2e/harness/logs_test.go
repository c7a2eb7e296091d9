package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTail(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var long strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	for _, c := range []struct{ what, path, want string }{
		{"the last lines only", write("long", long.String()), "    | line 38\n    | line 39\n    | line 40"},
		{"fewer lines than asked", write("short", "a\nb"), "    | a\n    | b"},
		{"an empty file", write("empty", ""), "    | "},
		{"no file", filepath.Join(dir, "absent"), "open " + filepath.Join(dir, "absent") + ": no such file or directory"},
	} {
		if got := Tail(c.path, 3); got != c.want {
			t.Errorf("%s: got %q, want %q", c.what, got, c.want)
		}
	}
}
