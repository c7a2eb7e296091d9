package main

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// ReleaseNamespace is where the chart is rendered, the namespace the plain manifests use.
const ReleaseNamespace = "kube-system"

// RenderChart renders the chart in dir as "helm template blocknode dir -n kube-system" would, with the
// chart's values.yaml overlaid by overrides (nil: defaults only), and decodes the result. The chart's
// values.schema.json is enforced, and the engine runs in strict mode: a template that reads a value that
// does not exist fails.
func RenderChart(dir string, overrides map[string]any) ([]*Object, error) {
	_, objects, err := renderAndDecode(dir, overrides)
	return objects, err
}

// renderAndDecode renders the chart and decodes every object, returning both the text and the objects.
func renderAndDecode(dir string, overrides map[string]any) (map[string]string, []*Object, error) {
	rendered, err := RenderChartText(dir, overrides)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		names = append(names, name)
	}
	sort.Strings(names)
	var objects []*Object
	for _, name := range names {
		objs, err := DecodeStream("chart:"+name, strings.NewReader(rendered[name]))
		objects = append(objects, objs...)
		if err != nil {
			return rendered, objects, err
		}
	}
	if len(objects) == 0 {
		return rendered, nil, fmt.Errorf("chart %s rendered no objects", dir)
	}
	return rendered, objects, nil
}

// RenderChartText renders the chart's manifest templates (not helpers, not NOTES.txt), by template name.
func RenderChartText(dir string, overrides map[string]any) (map[string]string, error) {
	chrt, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", dir, err)
	}
	if overrides == nil {
		overrides = map[string]any{}
	}
	values, err := chartutil.ToRenderValues(chrt, overrides, chartutil.ReleaseOptions{
		Name:      "blocknode",
		Namespace: ReleaseNamespace,
		Revision:  1,
		IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("chart %s values: %w", dir, err)
	}
	rendered, err := engine.Engine{Strict: true}.Render(chrt, values)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", dir, err)
	}
	for name := range rendered {
		base := path.Base(name)
		if strings.HasPrefix(base, "_") || !(strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml")) {
			delete(rendered, name)
		}
	}
	return rendered, nil
}

// RenderChartChecked renders like RenderChartText, then decodes every object strictly and applies
// blocknode's rules (Check) to the rendering, so values that render an invalid or inconsistent deployment
// fail here, naming what is wrong, rather than in the cluster.
func RenderChartChecked(dir string, overrides map[string]any) (map[string]string, error) {
	rendered, objects, err := renderAndDecode(dir, overrides)
	if err != nil {
		return nil, err
	}
	Check(objects)
	var problems []string
	for _, o := range objects {
		for _, e := range o.Errors {
			problems = append(problems, o.String()+": "+e)
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("chart %s renders a deployment that fails validation:\n  %s", dir,
			strings.Join(problems, "\n  "))
	}
	return rendered, nil
}
