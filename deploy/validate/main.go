// Command validate checks blocknode's deployment files offline: every YAML document under
// deploy/kubernetes/ and the Helm chart's default rendering are decoded strictly into the typed
// k8s.io/api structs (unknown or misspelled fields, duplicate keys, wrong types and unknown kinds are
// errors), then checked against blocknode's own rules (see checks.go), and the chart is compared with the
// plain manifests. It prints one line per object and "deploy: N passed, M failed", and exits 1 on any
// failure.
//
//	go run . -deploy ..           validate
//	go run . -deploy .. -render   print the chart's default rendering
//	go run . -pv my-pvs.yaml ...  check a user's own PersistentVolume files (and their claims): the same strict
//	                              decoding and PV rules (-driver-name NAME when the plugin's is not the default)
//	go run . -deploy .. -values-doc   print docs/reference/helm-values.md (the chart's values, generated)
//	go run . -dashboard-rules ../monitoring/dashboard.json   the dashboard's queries as a rule file (make check-rules)
//	go run . -deploy .. -render -set image.repository=localhost/blocknode/blocknode -set image.tag=0.1.0
//	                              print its rendering with those values (helm template's --set and
//	                              --set-string, repeatable; values.schema.json still rejects unknown keys)
//	go run . -deploy .. -package -version 1.2.3 -image-archive IMAGE.oci.tar -out dist
//	                              the chart packaged and linted for a release (release.go lists the modes
//	                              make release uses)
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/strvals"
)

func main() {
	deployDir := flag.String("deploy", "..", "the deploy/ directory (holding kubernetes/ and helm/blocknode/)")
	quiet := flag.Bool("q", false, "print failures and the totals only")
	render := flag.Bool("render", false, "print the chart's rendering (like helm template) and exit")
	valuesDoc := flag.Bool("values-doc", false, "print docs/reference/helm-values.md as the chart renders it now and exit")
	dashboardRules := flag.String("dashboard-rules", "", "print a Grafana dashboard's queries as a rule file, for promtool check rules, and exit")
	values := Values{}
	flag.Var(values.Flag(strvals.ParseInto), "set",
		"with -render: a chart value, key=value with dotted keys (helm --set); repeatable")
	flag.Var(values.Flag(strvals.ParseIntoString), "set-string",
		"with -render: a chart value that stays a string, e.g. image.tag=1 (helm --set-string); repeatable")
	pvFiles := flag.Bool("pv", false, "check the PersistentVolume files named after the flags (a user's own, or blocknode pv's output) and exit")
	pvDriver := flag.String("driver-name", defaultDriverName, "with -pv: the plugin's --driver-name, which every PV must name")
	release := addReleaseFlags()
	flag.Parse()
	if *pvFiles {
		os.Exit(pvFilesMode(flag.Args(), *pvDriver, *quiet))
	}
	if release.run(*deployDir) {
		return
	}
	if len(values) > 0 && !*render {
		fmt.Fprintln(os.Stderr, "-set and -set-string apply to -render only")
		os.Exit(2)
	}
	if *dashboardRules != "" {
		if err := PrintDashboardRules(os.Stdout, *dashboardRules); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *valuesDoc {
		page, err := ValuesDoc(filepath.Join(*deployDir, "helm", "blocknode"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Print(page)
		return
	}
	if *render {
		rendered, err := RenderChartChecked(filepath.Join(*deployDir, "helm", "blocknode"), values)
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

// Values are the chart values given on the command line, in the order given, each parsed as Helm parses
// --set (typed: numbers, booleans, null, {lists}) or --set-string (strings), into one nested map.
type Values map[string]any

// Flag is a flag.Value that parses each occurrence into v with parse.
func (v Values) Flag(parse func(string, map[string]any) error) flag.Value {
	return valuesFlag{v, parse}
}

type valuesFlag struct {
	values Values
	parse  func(string, map[string]any) error
}

func (f valuesFlag) String() string { return "" }

func (f valuesFlag) Set(s string) error {
	if f.values == nil {
		return fmt.Errorf("no values map")
	}
	return f.parse(s, f.values)
}
