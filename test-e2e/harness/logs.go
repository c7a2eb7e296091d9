package harness

import (
	"fmt"
	"os"
	"strings"
)

// Tail is the last lines of the file at path, each indented under a bar so that they stand apart from
// the check lines; or why the file could not be read.
func Tail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return "    | " + strings.Join(all, "\n    | ")
}

// PrintLogTails prints the last 30 lines of each started process's log, for a run that failed.
func PrintLogTails(processes ...*Process) {
	for _, p := range processes {
		if p != nil {
			fmt.Printf("\n--- last lines of %s (%s)\n%s\n", p.Name, p.Log, Tail(p.Log, 30))
		}
	}
}
