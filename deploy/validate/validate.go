package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
)

// Report is the outcome of one validation run: one line per object, then the totals.
type Report struct {
	Lines  []string
	Passed int
	Failed int
}

func (r *Report) add(objects []*Object) {
	for _, o := range objects {
		if len(o.Errors) == 0 {
			r.Passed++
			r.Lines = append(r.Lines, "ok   "+o.String())
			continue
		}
		r.Failed++
		r.Lines = append(r.Lines, "FAIL "+o.String())
		for _, e := range o.Errors {
			r.Lines = append(r.Lines, "       "+e)
		}
	}
}

func (r *Report) fail(format string, args ...any) {
	r.Failed++
	r.Lines = append(r.Lines, "FAIL "+fmt.Sprintf(format, args...))
}

// Validate checks deploy/kubernetes (every YAML file, examples included) and the chart's default rendering,
// each as one set, and that the chart renders the same driver objects as the plain manifests.
func Validate(deployDir string) Report {
	var r Report
	manifestsDir := filepath.Join(deployDir, "kubernetes")
	manifests, err := DecodeDir(manifestsDir)
	if err != nil {
		r.fail("%v", err)
	}
	Check(manifests)

	chartDir := filepath.Join(deployDir, "helm", "blocknode")
	rendered, err := RenderChart(chartDir, nil)
	if err != nil {
		r.fail("%v", err)
	}
	Check(rendered)
	CompareWithManifests(rendered, manifests, manifestsDir)

	for _, o := range manifests {
		if rel, err := filepath.Rel(deployDir, o.Source); err == nil {
			o.Source = rel // kubernetes/daemonset.yaml#1, whatever the working directory
		}
	}
	r.add(manifests)
	r.add(rendered)
	for _, problem := range CheckMonitoringCopies(deployDir) {
		r.fail("%s", problem)
	}
	return r
}

// CompareWithManifests fails every chart object that differs from the plain manifest of the same kind,
// namespace and name (in the top directory of deploy/kubernetes, not the examples), ignoring labels and
// annotations, which Helm adds to. The two ways to deploy must not drift apart.
func CompareWithManifests(rendered, manifests []*Object, manifestsDir string) {
	plain := map[string]*Object{}
	for _, o := range manifests {
		if o.Value != nil && filepath.Dir(strings.SplitN(o.Source, "#", 2)[0]) == filepath.Clean(manifestsDir) {
			plain[key(o.Kind, o.Namespace, o.Name)] = o
		}
	}
	for _, o := range rendered {
		if o.Value == nil {
			continue
		}
		k := key(o.Kind, o.Namespace, o.Name)
		m := plain[k]
		if m == nil {
			o.fail("no object of this kind and name in %s: the chart and the manifests differ", manifestsDir)
			continue
		}
		delete(plain, k)
		for _, d := range diff(normalized(m.Value), normalized(o.Value), "") {
			o.fail("differs from %s: %s", m.Source, d)
		}
	}
	for _, m := range plain {
		m.fail("the chart renders no such object: the chart and the manifests differ")
	}
}

func normalized(v any) map[string]any {
	data, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	for _, meta := range []any{m["metadata"], dig(m, "spec", "template", "metadata")} {
		if mm, ok := meta.(map[string]any); ok {
			delete(mm, "labels")
			delete(mm, "annotations")
			delete(mm, "creationTimestamp")
		}
	}
	return m
}

func dig(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

// diff lists the paths where a (manifest) and b (chart) differ, at most a handful.
func diff(a, b any, at string) []string {
	const most = 8
	if reflect.DeepEqual(a, b) {
		return nil
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		var out []string
		for _, k := range sorted {
			out = append(out, diff(am[k], bm[k], at+"."+k)...)
			if len(out) >= most {
				return out[:most]
			}
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, diff(al[i], bl[i], fmt.Sprintf("%s[%d]", at, i))...)
			if len(out) >= most {
				return out[:most]
			}
		}
		return out
	}
	return []string{fmt.Sprintf("%s: manifest %s, chart %s", strings.TrimPrefix(at, "."), short(a), short(b))}
}

func short(v any) string {
	data, _ := json.Marshal(v)
	if len(data) > 120 {
		return string(data[:117]) + "..."
	}
	return string(data)
}
