package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func readRepoFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func exported(t *testing.T) map[string][]string {
	t.Helper()
	series := QueryableSeries(string(readRepoFile(t, filepath.Join("..", "..", "docs", "reference", "metrics.md"))))
	// The page must really have been read: its own series and the process's section.
	for _, name := range []string{"blocknode_volumes", "blocknode_rpc_seconds_bucket", "process_resident_memory_bytes",
		"jvm_gc_pause_seconds_sum"} {
		if _, ok := series[name]; !ok {
			t.Fatalf("%s is not in docs/reference/metrics.md as read: %v", name, series)
		}
	}
	return series
}

// Every series (and every label matched on) in deploy/monitoring's rules and dashboard is one the plugin exports:
// docs/reference/metrics.md is generated from a scrape of the real plugin (MetricsReferenceHostTest) and fails
// the build when stale, so a renamed or removed metric cannot leave an alert that never fires or an empty panel.
func TestMonitoringNamesOnlyExportedSeries(t *testing.T) {
	series := exported(t)
	rules, err := RuleQueries(readRepoFile(t, filepath.Join(deployDir, "monitoring", "rules.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	panels, err := DashboardQueries(readRepoFile(t, filepath.Join(deployDir, "monitoring", "dashboard.json")))
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []struct {
		file    string
		queries map[string]string
		least   int // distinct series: the extraction found them at all
	}{{"rules.yaml", rules, 6}, {"dashboard.json", panels, 15}} {
		names := map[string]bool{}
		for where, expr := range set.queries {
			refs := SeriesInQuery(expr)
			for _, ref := range refs {
				names[ref.Name] = true
			}
			for _, problem := range CheckSeries(set.file+" "+where, refs, series) {
				t.Error(problem)
			}
		}
		if len(names) < set.least {
			t.Errorf("%s: only %d series found in its queries (%v); want at least %d", set.file, len(names),
				names, set.least)
		}
	}
}

// The check fails for real: a misspelled series, a label the family does not have, a series of another exporter.
func TestMonitoringCheckCatchesUnknownSeriesAndLabels(t *testing.T) {
	series := exported(t)
	for expr, want := range map[string]string{
		`sum(rate(blocknode_rpc_error_total[5m]))`:                  `"blocknode_rpc_error_total" is not a series`,
		`blocknode_volume_paths{phase="failed"} > 0`:                `blocknode_volume_paths has no label "phase"`,
		`node_memory_MemAvailable_bytes / on (instance) up`:         `"node_memory_MemAvailable_bytes" is not a series`,
		`rate(node_disk_read_bytes_total{mountpoint="/"}[5m])`:      `node_disk_read_bytes_total has no label "mountpoint"`,
		`blocknode_volume_device_info{disk="sdb"}`:                  `blocknode_volume_device_info has no label "disk"`,
		`histogram_quantile(0.9, rate(blocknode_phase_bucket[5m]))`: `"blocknode_phase_bucket" is not a series`,
	} {
		problems := CheckSeries("test", SeriesInQuery(expr), series)
		if len(problems) != 1 || !strings.Contains(problems[0], want) {
			t.Errorf("%s: want one problem containing %q, got %v", expr, want, problems)
		}
	}
}

// What the extraction takes for a series name, and what it does not (functions, keywords, labels in grouping
// clauses, durations, strings, Grafana variables).
func TestSeriesInQuery(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (node, phase) (blocknode_volumes{job=~"$job", instance=~"$instance"} * on (job, instance) group_left (node) max by (job, instance, node) (blocknode_build_info))`: {
			"blocknode_volumes job,instance", "blocknode_build_info"},
		`histogram_quantile(0.99, sum by (le, method) (rate(blocknode_rpc_seconds_bucket{method=~"A|B"}[$__rate_interval])))`: {
			"blocknode_rpc_seconds_bucket method"},
		`count(up{job=~".*blocknode.*"} == 0) or vector(0)`:          {"up job"},
		`changes(process_start_time_seconds[1h]) > bool 0 offset 5m`: {"process_start_time_seconds"},
		`{__name__="x{y}"}`: {" __name__"},
	} {
		var got []string
		for _, ref := range SeriesInQuery(expr) {
			got = append(got, strings.TrimSpace(ref.Name+" "+strings.Join(ref.Labels, ",")))
		}
		sort.Strings(got)
		sort.Strings(want)
		for i := range want {
			want[i] = strings.TrimSpace(want[i])
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got  %q\n want %q", expr, got, want)
		}
	}
}

// Off by default; on, the PrometheusRule carries rules.yaml's groups as they are and the ConfigMap the dashboard
// byte for byte, labelled for Grafana's sidecar.
func TestChartMonitoringValues(t *testing.T) {
	defaults, err := RenderChart(chartDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range defaults {
		// The log level's ConfigMap is always there; the dashboard's only when asked for.
		if o.Kind == "PrometheusRule" || o.Kind == "ConfigMap" && o.Name != "blocknode-log-level" {
			t.Errorf("rendered by default: %s", o)
		}
	}
	objects, err := RenderChart(chartDir, map[string]any{"monitoring": map[string]any{
		"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}},
		"dashboard": map[string]any{"enabled": true, "namespace": "grafana",
			"annotations": map[string]any{"grafana_folder": "Storage"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	Check(objects)
	var rule *PrometheusRule
	var dashboard *corev1.ConfigMap
	for _, o := range objects {
		if len(o.Errors) > 0 {
			t.Errorf("%s: %v", o, o.Errors)
		}
		switch v := o.Value.(type) {
		case *PrometheusRule:
			rule = v
		case *corev1.ConfigMap:
			if v.Name != "blocknode-log-level" {
				dashboard = v
			}
		}
	}
	if rule == nil || dashboard == nil {
		t.Fatalf("want a PrometheusRule and a ConfigMap, got rule %v, dashboard %v", rule != nil, dashboard != nil)
	}
	queries, err := RuleQueries(readRepoFile(t, filepath.Join(deployDir, "monitoring", "rules.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rule.Spec.Groups[0].Rules); n != len(queries) || rule.Labels["release"] != "prom" {
		t.Errorf("PrometheusRule: %d rules (want %d), labels %v", n, len(queries), rule.Labels)
	}
	for _, r := range rule.Spec.Groups[0].Rules {
		if strings.TrimSpace(r.Expr) != strings.TrimSpace(queries[r.Alert]) {
			t.Errorf("%s: expr %q, rules.yaml has %q", r.Alert, r.Expr, queries[r.Alert])
		}
	}
	source := strings.TrimSuffix(string(readRepoFile(t, filepath.Join(deployDir, "monitoring", "dashboard.json"))), "\n")
	if dashboard.Data["blocknode.json"] != source {
		t.Error("the ConfigMap's blocknode.json is not deploy/monitoring/dashboard.json")
	}
	if dashboard.Namespace != "grafana" || dashboard.Labels["grafana_dashboard"] != "1" ||
		dashboard.Annotations["grafana_folder"] != "Storage" {
		t.Errorf("ConfigMap namespace %q, labels %v, annotations %v", dashboard.Namespace, dashboard.Labels,
			dashboard.Annotations)
	}
	if !json.Valid([]byte(dashboard.Data["blocknode.json"])) {
		t.Error("the dashboard is not JSON")
	}
}

// Off by default; on, the PodMonitor scrapes this release's node plugins on their metrics port, with the values'
// labels, interval and metricRelabelings, and passes the set's checks; with metrics off the chart refuses to render.
func TestChartPodMonitor(t *testing.T) {
	defaults, err := RenderChart(chartDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range defaults {
		if o.Kind == "PodMonitor" {
			t.Errorf("rendered by default: %s", o)
		}
	}
	on := map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}, "interval": "30s",
		"metricRelabelings": []any{map[string]any{"sourceLabels": []any{"__name__"},
			"regex": "blocknode_rpc_seconds_bucket", "action": "drop"}}}
	objects, err := RenderChart(chartDir, map[string]any{"monitoring": map[string]any{"podMonitor": on}})
	if err != nil {
		t.Fatal(err)
	}
	Check(objects)
	var monitor *PodMonitor
	for _, o := range objects {
		if len(o.Errors) > 0 {
			t.Errorf("%s: %v", o, o.Errors)
		}
		if m, ok := o.Value.(*PodMonitor); ok {
			monitor = m
		}
	}
	if monitor == nil {
		t.Fatal("no PodMonitor rendered with monitoring.podMonitor.enabled")
	}
	e := monitor.Spec.PodMetricsEndpoints
	if monitor.Name != "blocknode" || monitor.Labels["release"] != "prom" || len(e) != 1 || e[0].Port != "metrics" ||
		e[0].Interval != "30s" || len(e[0].MetricRelabelings) != 1 || e[0].MetricRelabelings[0].Action != "drop" ||
		monitor.Spec.Selector.MatchLabels["app.kubernetes.io/instance"] == "" {
		t.Errorf("PodMonitor: %+v", monitor)
	}
	_, err = RenderChart(chartDir, map[string]any{"metrics": map[string]any{"enabled": false},
		"monitoring": map[string]any{"podMonitor": map[string]any{"enabled": true}}})
	if err == nil || !strings.Contains(err.Error(), "needs metrics.enabled") {
		t.Errorf("podMonitor on with metrics off: %v", err)
	}
	for _, host := range []string{"127.0.0.1", "::1", "[::1]", "localhost"} {
		_, err = RenderChart(chartDir, map[string]any{"metrics": map[string]any{"host": host},
			"monitoring": map[string]any{"podMonitor": map[string]any{"enabled": true}}})
		if err == nil || !strings.Contains(err.Error(), "keeps the endpoint on the node's loopback") {
			t.Errorf("podMonitor on with metrics.host %s: %v", host, err)
		}
	}
	if _, err = RenderChart(chartDir, map[string]any{"metrics": map[string]any{"host": "10.1.2.3"},
		"monitoring": map[string]any{"podMonitor": map[string]any{"enabled": true}}}); err != nil {
		t.Errorf("podMonitor on with metrics.host 10.1.2.3: %v", err)
	}
}

// A PodMonitor that would scrape the wrong pods, a port the plugin does not declare, or a job the alerts do not
// select is caught; a misspelled field too.
func TestPodMonitorChecks(t *testing.T) {
	objects, err := RenderChart(chartDir, map[string]any{"monitoring": map[string]any{
		"podMonitor": map[string]any{"enabled": true}}})
	if err != nil {
		t.Fatal(err)
	}
	var rest []*Object
	for _, o := range objects {
		if o.Kind != "PodMonitor" {
			rest = append(rest, o)
		}
	}
	const ok = "selector: {matchLabels: {app.kubernetes.io/name: blocknode, app.kubernetes.io/component: node-plugin}}\n" +
		"  podMetricsEndpoints: [{port: metrics}]\n"
	for _, c := range []struct{ name, spec, want string }{
		{"blocknode", ok, ""},
		{"node-metrics", ok, "lacks \"blocknode\""},
		{"blocknode", "selector: {}\n  podMetricsEndpoints: [{port: metrics}]\n", "selector is empty"},
		{"blocknode", "selector: {matchLabels: {app.kubernetes.io/name: blocknode}}\n  podMetricsEndpoints: [{port: metrics}]\n",
			"Deployment blocknode-controller"},
		{"blocknode", "selector: {matchLabels: {app: other}}\n  podMetricsEndpoints: [{port: metrics}]\n", "picks no node plugin"},
		{"blocknode", strings.Replace(ok, "port: metrics", "port: metric", 1), "port \"metric\" is not a port"},
		{"blocknode", strings.Replace(ok, "port: metrics", "port: metrics, path: /stats", 1), "path \"/stats\""},
		{"blocknode", ok + "  namespaceSelector: {any: true}\n", "reaches past its own namespace"},
		{"blocknode", ok + "  podMetricsEndpoint: []\n", "podMetricsEndpoint"},
	} {
		doc := "apiVersion: monitoring.coreos.com/v1\nkind: PodMonitor\nmetadata: {name: " + c.name +
			", namespace: " + ReleaseNamespace + "}\nspec:\n  " + c.spec
		monitor := decodeOne(t, doc)
		set := append(append([]*Object{}, rest...), monitor)
		Check(set)
		got := strings.Join(monitor.Errors, "; ")
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s %q: errors %q, want %q", c.name, c.spec, got, c.want)
		}
	}
}

// A misspelled field of a PrometheusRule is an error, as for the typed kinds; so is an alert without severity.
func TestPrometheusRuleIsDecodedStrictly(t *testing.T) {
	const head = "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: r}\nspec:\n  groups:\n  - name: g\n    rules:\n"
	misspelled := decodeOne(t, head+"    - alert: A\n      expresion: up == 0\n")
	if len(misspelled.Errors) == 0 || !strings.Contains(strings.Join(misspelled.Errors, ";"), "expresion") {
		t.Errorf("misspelled field: %v", misspelled.Errors)
	}
	noSeverity := decodeOne(t, head+"    - alert: A\n      expr: up == 0\n      annotations: {summary: s}\n")
	Check([]*Object{noSeverity})
	if len(noSeverity.Errors) != 1 || !strings.Contains(noSeverity.Errors[0], "labels.severity") {
		t.Errorf("alert without severity: %v", noSeverity.Errors)
	}
}

// The chart's copies of the rules and the dashboard are deploy/monitoring's, and a stale copy is caught.
func TestMonitoringCopiesAreCaughtWhenStale(t *testing.T) {
	if problems := CheckMonitoringCopies(deployDir); len(problems) != 0 {
		t.Fatal(problems)
	}
	dir := t.TempDir()
	for _, sub := range []string{"monitoring", filepath.Join("helm", "blocknode", "monitoring")} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range monitoringFiles {
			content := "same"
			if sub != "monitoring" && name == "rules.yaml" {
				content = "edited in the chart only"
			}
			if err := os.WriteFile(filepath.Join(dir, sub, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	problems := CheckMonitoringCopies(dir)
	if len(problems) != 1 || !strings.Contains(problems[0], "rules.yaml differs") {
		t.Errorf("want one problem for rules.yaml, got %v", problems)
	}
}

// The dashboard's queries as a rule file for promtool (make check-rules): one recording rule per query, Grafana's
// variables replaced, so that what promtool parses is what Grafana sends.
func TestDashboardRules(t *testing.T) {
	var out bytes.Buffer
	file := filepath.Join(deployDir, "monitoring", "dashboard.json")
	if err := PrintDashboardRules(&out, file); err != nil {
		t.Fatal(err)
	}
	queries, err := RuleQueries(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	panels, err := DashboardQueries(readRepoFile(t, file))
	if err != nil {
		t.Fatal(err)
	}
	if len(queries) != len(panels) || len(queries) < 20 {
		t.Errorf("%d rules for %d queries", len(queries), len(panels))
	}
	// A regular expression's group in label_replace's replacement ("$1") is PromQL's, not a Grafana variable:
	// Grafana leaves a name it has no variable for as it is.
	group := regexp.MustCompile(`\$\{?[0-9]+\}?`)
	for name, expr := range queries {
		if strings.Contains(group.ReplaceAllString(expr, ""), "$") {
			t.Errorf("%s: a Grafana variable is left: %s", name, expr)
		}
	}
}
