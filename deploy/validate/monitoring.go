package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	sigsyaml "sigs.k8s.io/yaml"
)

// PrometheusRule is the Prometheus Operator's monitoring.coreos.com/v1 PrometheusRule, reduced to the fields
// its CRD defines for rule groups. The operator's own Go types would bring in its whole module for one
// kind; this struct is decoded as strictly as the k8s.io/api types (a misspelled or unknown field is an
// error), so a typo in the chart's template fails here rather than being pruned silently by the API server.
type PrometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              RuleFile `json:"spec"`
}

// RuleFile is a Prometheus rule file's content, which is also a PrometheusRule's spec.
type RuleFile struct {
	Groups []RuleGroup `json:"groups"`
}

type RuleGroup struct {
	Name                    string `json:"name"`
	Interval                string `json:"interval,omitempty"`
	Limit                   *int   `json:"limit,omitempty"`
	QueryOffset             string `json:"query_offset,omitempty"`
	PartialResponseStrategy string `json:"partial_response_strategy,omitempty"`
	Rules                   []Rule `json:"rules"`
}

type Rule struct {
	Alert         string            `json:"alert,omitempty"`
	Record        string            `json:"record,omitempty"`
	Expr          string            `json:"expr"`
	For           string            `json:"for,omitempty"`
	KeepFiringFor string            `json:"keep_firing_for,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// PodMonitor is the Prometheus Operator's monitoring.coreos.com/v1 PodMonitor, reduced to the fields the chart
// can render (and a few a user's values may add), decoded as strictly as PrometheusRule.
type PodMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              PodMonitorSpec `json:"spec"`
}

type PodMonitorSpec struct {
	JobLabel            string               `json:"jobLabel,omitempty"`
	Selector            metav1.LabelSelector `json:"selector"`
	NamespaceSelector   *NamespaceSelector   `json:"namespaceSelector,omitempty"`
	PodMetricsEndpoints []PodMetricsEndpoint `json:"podMetricsEndpoints"`
	PodTargetLabels     []string             `json:"podTargetLabels,omitempty"`
	SampleLimit         *int64               `json:"sampleLimit,omitempty"`
}

type NamespaceSelector struct {
	Any        bool     `json:"any,omitempty"`
	MatchNames []string `json:"matchNames,omitempty"`
}

type PodMetricsEndpoint struct {
	Port              string          `json:"port,omitempty"`
	Path              string          `json:"path,omitempty"`
	Scheme            string          `json:"scheme,omitempty"`
	Interval          string          `json:"interval,omitempty"`
	ScrapeTimeout     string          `json:"scrapeTimeout,omitempty"`
	HonorLabels       bool            `json:"honorLabels,omitempty"`
	MetricRelabelings []RelabelConfig `json:"metricRelabelings,omitempty"`
	Relabelings       []RelabelConfig `json:"relabelings,omitempty"`
}

// RelabelConfig is one of Prometheus' relabel_configs, as the Prometheus Operator spells its fields.
type RelabelConfig struct {
	SourceLabels []string `json:"sourceLabels,omitempty"`
	Separator    *string  `json:"separator,omitempty"`
	TargetLabel  string   `json:"targetLabel,omitempty"`
	Regex        string   `json:"regex,omitempty"`
	Modulus      uint64   `json:"modulus,omitempty"`
	Replacement  *string  `json:"replacement,omitempty"`
	Action       string   `json:"action,omitempty"`
}

// checkPodMonitor: the scrape job the alerts and the dashboard expect. Its name holds "blocknode" (the operator's
// job is <namespace>/<name>, and they select the plugin's targets by it); it looks in its own namespace only; its
// selector is not empty (an empty one scrapes every pod of the namespace) and picks the pods of a DaemonSet of the
// set that runs the plugin, and no other workload's; each endpoint names a port the plugin container declares, at
// /metrics over http.
func checkPodMonitor(o *Object, m *PodMonitor, s *objectSet) {
	if !strings.Contains(m.Name, "blocknode") {
		o.fail("its name %q lacks \"blocknode\": its job (<namespace>/<name>) would match no alert's or dashboard's job selector", m.Name)
	}
	if ns := m.Spec.NamespaceSelector; ns != nil && (ns.Any || len(ns.MatchNames) > 0) {
		o.fail("spec.namespaceSelector reaches past its own namespace, where the plugin's pods are")
	}
	if len(m.Spec.Selector.MatchLabels) == 0 && len(m.Spec.Selector.MatchExpressions) == 0 {
		o.fail("spec.selector is empty: it would scrape every pod of the namespace")
		return
	}
	selector, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
	if err != nil {
		o.fail("spec.selector: %v", err)
		return
	}
	var plugin *corev1.Container
	for _, ds := range s.daemonSets {
		if ds.Namespace != m.Namespace || !selector.Matches(labels.Set(ds.Spec.Template.Labels)) {
			continue
		}
		if c := findContainer(ds.Spec.Template.Spec.Containers, pluginContainer); c != nil {
			plugin = c
		} else {
			o.fail("spec.selector also picks the pods of DaemonSet %s, which runs no plugin", ds.Name)
		}
	}
	for _, obj := range s.byKey {
		if d, ok := obj.Value.(*appsv1.Deployment); ok && d.Namespace == m.Namespace &&
			selector.Matches(labels.Set(d.Spec.Template.Labels)) {
			o.fail("spec.selector also picks the pods of Deployment %s", d.Name)
		}
	}
	if plugin == nil {
		o.fail("spec.selector picks no node plugin's pods in namespace %q", m.Namespace)
	}
	if len(m.Spec.PodMetricsEndpoints) == 0 {
		o.fail("spec.podMetricsEndpoints is empty")
	}
	for i, e := range m.Spec.PodMetricsEndpoints {
		at := fmt.Sprintf("spec.podMetricsEndpoints[%d]", i)
		if plugin != nil && (e.Port == "" || containerPort(plugin, e.Port) == 0) {
			o.fail("%s: port %q is not a port the plugin container declares", at, e.Port)
		}
		if e.Path != "" && e.Path != "/metrics" {
			o.fail("%s: path %q; the plugin serves /metrics", at, e.Path)
		}
		if e.Scheme != "" && e.Scheme != "http" {
			o.fail("%s: scheme %q; the plugin serves http", at, e.Scheme)
		}
	}
}

// The sources in deploy/monitoring and the copies the chart reads (a chart can read only its own files).
var monitoringFiles = []string{"rules.yaml", "dashboard.json"}

// CheckMonitoringCopies fails when a chart copy of deploy/monitoring's rules or dashboard differs from its source.
func CheckMonitoringCopies(deployDir string) []string {
	var problems []string
	for _, name := range monitoringFiles {
		source := filepath.Join(deployDir, "monitoring", name)
		copied := filepath.Join(deployDir, "helm", "blocknode", "monitoring", name)
		a, errA := os.ReadFile(source)
		b, errB := os.ReadFile(copied)
		switch {
		case errA != nil:
			problems = append(problems, errA.Error())
		case errB != nil:
			problems = append(problems, errB.Error())
		case !bytes.Equal(a, b):
			problems = append(problems, fmt.Sprintf("%s differs from %s: cp %s %s", copied, source, source, copied))
		}
	}
	return problems
}

// checkPrometheusRule: every group named and not empty, every rule an alert or a recording with an expression,
// every alert with a severity and a summary (what a pager shows).
func checkPrometheusRule(o *Object, r *PrometheusRule) {
	if len(r.Spec.Groups) == 0 {
		o.fail("spec.groups is empty")
	}
	for _, g := range r.Spec.Groups {
		if g.Name == "" {
			o.fail("a rule group has no name")
		}
		if len(g.Rules) == 0 {
			o.fail("rule group %q has no rules", g.Name)
		}
		for i, rule := range g.Rules {
			at := fmt.Sprintf("group %q rule %d", g.Name, i)
			switch {
			case (rule.Alert == "") == (rule.Record == ""):
				o.fail("%s: exactly one of alert and record is required", at)
			case strings.TrimSpace(rule.Expr) == "":
				o.fail("%s (%s%s): expr is empty", at, rule.Alert, rule.Record)
			case rule.Alert != "" && (rule.Labels["severity"] == "" || rule.Annotations["summary"] == ""):
				o.fail("%s (%s): an alert needs labels.severity and annotations.summary", at, rule.Alert)
			}
		}
	}
}

// checkDashboardConfigMap: every .json entry of a ConfigMap is a Grafana dashboard (an object with a title and
// panels), so a broken copy never reaches Grafana's sidecar.
func checkDashboardConfigMap(o *Object, cm *corev1.ConfigMap) {
	for key, value := range cm.Data {
		if !strings.HasSuffix(key, ".json") {
			continue
		}
		var dashboard struct {
			Title  string            `json:"title"`
			Panels []json.RawMessage `json:"panels"`
		}
		if err := json.Unmarshal([]byte(value), &dashboard); err != nil {
			o.fail("data[%s] is not JSON: %v", key, err)
		} else if dashboard.Title == "" || len(dashboard.Panels) == 0 {
			o.fail("data[%s] is not a Grafana dashboard (no title or no panels)", key)
		}
	}
}

// ---- the series the rules and the dashboard name ------------------------------------------------------------

// ExportedSeries are the series names a query may use: every family of docs/reference/metrics.md (generated from a
// scrape of the real plugin), a histogram's or summary's with their _bucket, _count and _sum samples, mapped to
// the family's label names; plus up, which Prometheus records for every target it scrapes.
func ExportedSeries(metricsPage string) map[string][]string {
	row := regexp.MustCompile("(?m)^\\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \\| ([a-z]+) \\| ([^|]*)\\|")
	series := map[string][]string{"up": nil}
	for _, m := range row.FindAllStringSubmatch(metricsPage, -1) {
		var labels []string
		for _, l := range strings.Split(m[3], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" {
				labels = append(labels, l)
			}
		}
		series[m[1]] = labels
		switch m[2] {
		case "histogram":
			for _, s := range []string{"_bucket", "_count", "_sum"} {
				series[m[1]+s] = append(labels, "le")
			}
		case "summary":
			for _, s := range []string{"_count", "_sum"} {
				series[m[1]+s] = labels
			}
		}
	}
	return series
}

// NodeExporterDiskSeries are node_exporter's per-disk counters (its diskstats collector) that the dashboard's
// "Volume devices" row joins to blocknode_volume_device_info on the device's kernel name, with the labels a query
// may match on. The one other exporter a query here may name, one series at a time: any other series of
// node_exporter (or a label of these but device) is refused as a series the plugin does not export.
var NodeExporterDiskSeries = map[string][]string{
	"node_disk_read_time_seconds_total":        {"device"},
	"node_disk_reads_completed_total":          {"device"},
	"node_disk_write_time_seconds_total":       {"device"},
	"node_disk_writes_completed_total":         {"device"},
	"node_disk_io_time_weighted_seconds_total": {"device"},
	"node_disk_read_bytes_total":               {"device"},
	"node_disk_written_bytes_total":            {"device"},
}

// QueryableSeries are the series a rule or dashboard query may name: the plugin's (ExportedSeries) and
// NodeExporterDiskSeries.
func QueryableSeries(metricsPage string) map[string][]string {
	series := ExportedSeries(metricsPage)
	for name, labels := range NodeExporterDiskSeries {
		series[name] = labels
	}
	return series
}

// TargetLabels are what Prometheus adds to every series of a target: a query may match on them everywhere.
var TargetLabels = []string{"job", "instance"}

// SeriesRef is one series a query names, with the label names its selector matches on.
type SeriesRef struct {
	Name   string
	Labels []string
}

var (
	promString   = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promSelector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}`)
	promMatcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	promRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promVariable = regexp.MustCompile(`\$\{?[a-zA-Z_][a-zA-Z0-9_]*\}?`)
	promName     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"inf": true, "nan": true, "Inf": true, "NaN": true}
)

// SeriesInQuery lists the series a PromQL expression names, without a full parser: what is left once strings,
// label matchers, ranges, grouping clauses and Grafana's $variables are taken out, less functions (a name
// followed by a parenthesis), keywords and the units of numbers. Good for the queries of this repository, which
// a test pins; a series it could miss would still have to pass promtool and the rules' unit tests.
func SeriesInQuery(expr string) []SeriesRef {
	var refs []SeriesRef
	blank := promString.ReplaceAllStringFunc(expr, func(s string) string { return `""` })
	blank = promSelector.ReplaceAllStringFunc(blank, func(s string) string {
		m := promSelector.FindStringSubmatch(s)
		var labels []string
		for _, lm := range promMatcher.FindAllStringSubmatch(m[2], -1) {
			labels = append(labels, lm[1])
		}
		// A selector without a name ({__name__=~...}) is a ref without one, which CheckSeries refuses: a query
		// of this repository names its series.
		refs = append(refs, SeriesRef{Name: m[1], Labels: labels})
		return " "
	})
	blank = promRange.ReplaceAllString(blank, " ")
	blank = promGrouping.ReplaceAllString(blank, " ")
	blank = promVariable.ReplaceAllString(blank, " ")
	for _, loc := range promName.FindAllStringIndex(blank, -1) {
		name := blank[loc[0]:loc[1]]
		if promKeywords[name] {
			continue
		}
		if loc[0] > 0 && strings.ContainsAny(blank[loc[0]-1:loc[0]], "0123456789.") {
			continue // the unit of a duration or number: 5m, 1e3
		}
		if next := strings.TrimLeft(blank[loc[1]:], " \t\n"); strings.HasPrefix(next, "(") {
			continue // a function or an aggregation
		}
		refs = append(refs, SeriesRef{Name: name})
	}
	return refs
}

// CheckSeries lists every reference to a series the plugin does not export, or to a label its family does not
// have, naming where it was found.
func CheckSeries(where string, refs []SeriesRef, exported map[string][]string) []string {
	var problems []string
	for _, ref := range refs {
		labels, ok := exported[ref.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: %q is not a series the plugin exports (docs/reference/metrics.md)",
				where, ref.Name))
			continue
		}
		allowed := map[string]bool{}
		for _, l := range append(append([]string{}, labels...), TargetLabels...) {
			allowed[l] = true
		}
		for _, l := range ref.Labels {
			if !allowed[l] {
				problems = append(problems, fmt.Sprintf("%s: %s has no label %q (it has %s)", where, ref.Name, l,
					strings.Join(labels, ", ")))
			}
		}
	}
	return problems
}

// RuleQueries are the expressions of a rule file, by alert or record name.
func RuleQueries(ruleFile []byte) (map[string]string, error) {
	var rules RuleFile
	if err := sigsyaml.UnmarshalStrict(ruleFile, &rules); err != nil {
		return nil, err
	}
	queries := map[string]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			queries[r.Alert+r.Record] = r.Expr
		}
	}
	return queries, nil
}

// DashboardQueries are the PromQL expressions of a Grafana dashboard: every panel target's expr (rows' nested
// panels too) and the selector of every label_values() variable, by where they are.
func DashboardQueries(dashboard []byte) (map[string]string, error) {
	var d map[string]any
	if err := json.Unmarshal(dashboard, &d); err != nil {
		return nil, err
	}
	queries := map[string]string{}
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if expr, ok := x["expr"].(string); ok {
				queries[at] = expr
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(at+"."+k, x[k])
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", at, i), e)
			}
		}
	}
	walk("panels", d["panels"])
	labelValues := regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)
	if templating, ok := d["templating"].(map[string]any); ok {
		list, _ := templating["list"].([]any)
		for _, v := range list {
			variable, _ := v.(map[string]any)
			if variable["type"] != "query" {
				continue
			}
			query, _ := variable["query"].(string)
			if q, ok := variable["query"].(map[string]any); ok {
				query, _ = q["query"].(string)
			}
			if m := labelValues.FindStringSubmatch(query); m != nil {
				queries[fmt.Sprintf("templating $%v", variable["name"])] = m[1]
			} else {
				queries[fmt.Sprintf("templating $%v", variable["name"])] = query
			}
		}
	}
	return queries, nil
}

// grafanaVariables are what the dashboard's queries use of Grafana's: replaced by what Grafana would put there.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$job", ".+",
	"$instance", ".+")

// PrintDashboardRules writes the dashboard's queries as recording rules, Grafana's variables replaced, so that
// promtool's rule check parses every one of them (make check-rules): a query that is not PromQL fails there.
func PrintDashboardRules(w io.Writer, dashboardFile string) error {
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		return err
	}
	queries, err := DashboardQueries(data)
	if err != nil {
		return fmt.Errorf("%s: %w", dashboardFile, err)
	}
	where := make([]string, 0, len(queries))
	for k := range queries {
		where = append(where, k)
	}
	sort.Strings(where)
	group := RuleGroup{Name: "dashboard queries of " + filepath.Base(dashboardFile)}
	for i, k := range where {
		group.Rules = append(group.Rules, Rule{Record: fmt.Sprintf("dashboard:query%d", i),
			Expr: grafanaVariables.Replace(queries[k]), Labels: map[string]string{"from": k}})
	}
	out, err := sigsyaml.Marshal(RuleFile{Groups: []RuleGroup{group}})
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}
