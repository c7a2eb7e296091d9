// Command validate checks blocknode's deployment files offline: every YAML document under
// deploy/kubernetes/ and the Helm chart's default rendering are decoded strictly into the typed
// k8s.io/api structs (unknown or misspelled fields, duplicate keys, wrong types and unknown kinds are
// errors), then checked against blocknode's own rules (see checks.go), and the chart is compared with the
// plain manifests. It prints one line per object and "deploy: N passed, M failed", and exits 1 on any
// failure.
//
//	go run . -deploy ..           validate
//	go run . -deploy .. -render   print the chart's default rendering
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	deployDir := flag.String("deploy", "..", "the deploy/ directory (holding kubernetes/ and helm/blocknode/)")
	quiet := flag.Bool("q", false, "print failures and the totals only")
	render := flag.Bool("render", false, "print the chart's default rendering (like helm template) and exit")
	flag.Parse()
	if *render {
		rendered, err := RenderChartText(filepath.Join(*deployDir, "helm", "blocknode"), nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		names := make([]string, 0, len(rendered))
		for name := range rendered {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			fmt.Printf("---\n# Source: %s\n%s\n", name, strings.TrimSpace(rendered[name]))
		}
		return
	}
	report := Validate(*deployDir)
	for _, line := range report.Lines {
		if !*quiet || line[:2] != "ok" {
			fmt.Println(line)
		}
	}
	fmt.Printf("deploy: %d passed, %d failed\n", report.Passed, report.Failed)
	if report.Failed > 0 || report.Passed == 0 {
		os.Exit(1)
	}
}
