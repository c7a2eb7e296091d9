package main

// The Helm values reference, docs/reference/helm-values.md, rendered from the chart's values.yaml (keys,
// defaults and the comment above each key) and values.schema.json (types, allowed values). `deploy-validate
// -values-doc` prints it; TestValuesDocIsCurrent fails when the page is stale (BLOCKNODE_WRITE_DOCS=1, as
// `make docs` sets it, rewrites the page instead).

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// ValuesDoc renders the page for the chart in chartDir.
func ValuesDoc(chartDir string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return "", err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return "", fmt.Errorf("values.yaml: %w", err)
	}
	schemaRaw, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		return "", err
	}
	var schema map[string]any
	if err := json.Unmarshal(schemaRaw, &schema); err != nil {
		return "", fmt.Errorf("values.schema.json: %w", err)
	}
	var out strings.Builder
	out.WriteString("# Helm values\n\n")
	out.WriteString("<!-- Generated from deploy/helm/blocknode/values.yaml and values.schema.json by `make docs`" +
		" (deploy-validate -values-doc); a test in deploy/validate fails when this page is stale. Do not edit by" +
		" hand. -->\n\n")
	out.WriteString("Every value of the chart in `deploy/helm/blocknode`, with its default and the comment that" +
		" explains it in `values.yaml`. `values.schema.json` rejects any key not listed here, so a misspelled" +
		" `--set` fails instead of being ignored. With the defaults the chart renders exactly the objects of" +
		" `deploy/kubernetes/` (labels aside); `make validate-deploy` fails if they drift apart. Install and" +
		" upgrade: [Install](../install.md), [Operations](../operations.md).\n\n")
	out.WriteString("| value | type | default | meaning |\n| --- | --- | --- | --- |\n")
	if len(doc.Content) == 0 {
		return "", fmt.Errorf("values.yaml is empty")
	}
	if err := valueRows(&out, doc.Content[0], "", schema, schema); err != nil {
		return "", err
	}
	return out.String(), nil
}

func valueRows(out *strings.Builder, node *yaml.Node, prefix string, schema, root map[string]any) error {
	if node.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: not a mapping", prefix)
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		key, value := node.Content[i], node.Content[i+1]
		path := key.Value
		if prefix != "" {
			path = prefix + "." + key.Value
		}
		sub := resolve(property(schema, key.Value), root)
		comment := commentText(key.HeadComment)
		if props, ok := sub["properties"].(map[string]any); ok && len(props) > 0 && value.Kind == yaml.MappingNode {
			if comment != "" {
				fmt.Fprintf(out, "| `%s` | object | | %s |\n", path, cell(comment))
			}
			if err := valueRows(out, value, path, sub, root); err != nil {
				return err
			}
			continue
		}
		var v any
		if err := value.Decode(&v); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if comment == "" {
			comment, _ = sub["description"].(string)
		}
		if value.LineComment != "" {
			comment = strings.TrimSpace(comment + " " + commentText(value.LineComment))
		}
		fmt.Fprintf(out, "| `%s` | %s | %s | %s |\n", path, cell(schemaType(sub)), cell(defaultText(v)), cell(comment))
	}
	return nil
}

func property(schema map[string]any, name string) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	p, _ := props[name].(map[string]any)
	return p
}

func resolve(schema, root map[string]any) map[string]any {
	if schema == nil {
		return map[string]any{}
	}
	if ref, ok := schema["$ref"].(string); ok && strings.HasPrefix(ref, "#/definitions/") {
		defs, _ := root["definitions"].(map[string]any)
		if d, ok := defs[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any); ok {
			return d
		}
	}
	return schema
}

func schemaType(s map[string]any) string {
	if enum, ok := s["enum"].([]any); ok {
		var parts []string
		for _, e := range enum {
			parts = append(parts, fmt.Sprintf("`%v`", e))
		}
		return strings.Join(parts, ", ")
	}
	if c, ok := s["const"]; ok {
		return fmt.Sprintf("`%v`", c)
	}
	// A value that takes one of several forms (repairInterval: 0 or a duration) lists each; an
	// alternative without a type of its own has the value's.
	if alternatives, ok := s["anyOf"].([]any); ok {
		var parts []string
		for _, a := range alternatives {
			if m, ok := a.(map[string]any); ok {
				if _, typed := m["type"]; !typed && s["type"] != nil {
					m = maps.Clone(m)
					m["type"] = s["type"]
				}
				if t := schemaType(m); t != "" {
					parts = append(parts, t)
				}
			}
		}
		return strings.Join(parts, " or ")
	}
	t, _ := s["type"].(string)
	if t == "" {
		return ""
	}
	var limits []string
	if p, ok := s["pattern"].(string); ok {
		switch p {
		case "^/":
			limits = append(limits, "absolute path")
		case "^([0-9]+(h|m|s)|[0-9]+\\.[0-9]+s)$":
			limits = append(limits, "duration: `30s`, `2m`, `1h`, `0.5s`")
		case "^(0|[0-9]+(h|m|s)|[0-9]+\\.[0-9]+s)$":
			limits = append(limits, "duration: `30s`, `2m`, `1h`, `0.5s`, or `0`")
		default:
			limits = append(limits, "pattern `"+p+"`")
		}
	}
	if min, ok := s["minimum"].(float64); ok {
		limits = append(limits, fmt.Sprintf(">= %v", min))
	}
	if min, ok := s["exclusiveMinimum"].(float64); ok {
		limits = append(limits, fmt.Sprintf("> %v", min))
	}
	if max, ok := s["maximum"].(float64); ok {
		limits = append(limits, fmt.Sprintf("<= %v", max))
	}
	if len(limits) > 0 {
		return t + " (" + strings.Join(limits, "; ") + ")"
	}
	return t
}

func defaultText(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return "`\"\"`"
		}
		return "`" + x + "`"
	case nil:
		return "`null`"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return "`" + string(b) + "`"
}

func commentText(c string) string {
	var lines []string
	for _, line := range strings.Split(c, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
		if line != "" {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, " ")
}

func cell(s string) string {
	return strings.ReplaceAll(s, "|", "\\|")
}
