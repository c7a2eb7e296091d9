package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"
)

// Object is one YAML document, decoded into its typed k8s.io/api struct.
type Object struct {
	Source     string // file (and document number) or chart template it came from
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	Value      any // *appsv1.DaemonSet, *storagev1.CSIDriver, *corev1.PersistentVolume, ...
	Errors     []string
}

func (o *Object) fail(format string, args ...any) {
	o.Errors = append(o.Errors, fmt.Sprintf(format, args...))
}

// String names the object as kubectl would, with where it came from.
func (o *Object) String() string {
	name := o.Name
	if o.Namespace != "" {
		name = o.Namespace + "/" + name
	}
	if o.Kind == "" {
		return o.Source
	}
	return fmt.Sprintf("%s %s %s", o.Source, o.Kind, name)
}

// kinds are the objects a deployment of blocknode consists of. Anything else is an error: the validator
// must know every kind it is given, or a typo in apiVersion/kind would pass unchecked.
var kinds = map[string]func() any{
	"apps/v1/DaemonSet":           func() any { return &appsv1.DaemonSet{} },
	"apps/v1/Deployment":          func() any { return &appsv1.Deployment{} },
	"storage.k8s.io/v1/CSIDriver": func() any { return &storagev1.CSIDriver{} },
	"v1/ConfigMap":                func() any { return &corev1.ConfigMap{} }, // the log level; the Grafana dashboard (chart)
	"v1/PersistentVolume":         func() any { return &corev1.PersistentVolume{} },
	"v1/PersistentVolumeClaim":    func() any { return &corev1.PersistentVolumeClaim{} },
	"v1/Pod":                      func() any { return &corev1.Pod{} },
	"v1/Secret":                   func() any { return &corev1.Secret{} },
	"v1/ServiceAccount":           func() any { return &corev1.ServiceAccount{} },
	// RBAC only for the controller side's external-attacher (controller-rbac.yaml); the node plugin and its
	// sidecars talk to no Kubernetes API. checkRBAC keeps the grants to what the attacher needs.
	"rbac.authorization.k8s.io/v1/ClusterRole":        func() any { return &rbacv1.ClusterRole{} },
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding": func() any { return &rbacv1.ClusterRoleBinding{} },
	"rbac.authorization.k8s.io/v1/Role":               func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding":        func() any { return &rbacv1.RoleBinding{} },
	// The chart's alerts (monitoring.prometheusRule.enabled): a CRD, decoded into monitoring.go's own struct.
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return &PrometheusRule{} },
	// The chart's scrape job (monitoring.podMonitor.enabled): the same, monitoring.go's own struct.
	"monitoring.coreos.com/v1/PodMonitor": func() any { return &PodMonitor{} },
}

// DecodeStream splits a multi-document YAML stream and decodes every non-empty document.
func DecodeStream(source string, r io.Reader) ([]*Object, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var objects []*Object
	for index := 1; ; index++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objects, nil
		}
		if err != nil {
			return objects, fmt.Errorf("%s: reading document %d: %w", source, index, err)
		}
		if obj := DecodeDocument(fmt.Sprintf("%s#%d", source, index), doc); obj != nil {
			objects = append(objects, obj)
		}
	}
}

// DecodeDocument decodes one document strictly: duplicate keys, unknown fields (in any letter case other
// than the API's), wrong types and unknown kinds are errors. It returns nil for an empty document.
func DecodeDocument(source string, doc []byte) *Object {
	obj := &Object{Source: source}
	jsonDoc, err := sigsyaml.YAMLToJSONStrict(doc)
	if err != nil {
		obj.fail("not valid YAML: %v", err)
		return obj
	}
	if trimmed := bytes.TrimSpace(jsonDoc); len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(jsonDoc, &head); err != nil {
		obj.fail("not a Kubernetes object: %v", err)
		return obj
	}
	obj.APIVersion, obj.Kind = head.APIVersion, head.Kind
	obj.Name, obj.Namespace = head.Metadata.Name, head.Metadata.Namespace
	newValue, known := kinds[head.APIVersion+"/"+head.Kind]
	if !known {
		obj.fail("unknown kind %q in apiVersion %q (known: %s)", head.Kind, head.APIVersion, knownKinds())
		return obj
	}
	value := newValue()
	strictErrs, err := sigsjson.UnmarshalStrict(jsonDoc, value, sigsjson.DisallowDuplicateFields,
		sigsjson.DisallowUnknownFields)
	if err != nil {
		obj.fail("does not decode as %s %s: %v", head.APIVersion, head.Kind, err)
		return obj
	}
	for _, e := range strictErrs {
		obj.fail("%v", e)
	}
	if obj.Name == "" {
		obj.fail("metadata.name is empty")
	}
	obj.Value = value
	return obj
}

func knownKinds() string {
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// DecodeDir decodes every *.yaml / *.yml file under dir, recursively, in a stable order.
func DecodeDir(dir string) ([]*Object, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no YAML files under %s", dir)
	}
	sort.Strings(files)
	var objects []*Object
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return objects, err
		}
		objs, err := DecodeStream(path, f)
		f.Close()
		objects = append(objects, objs...)
		if err != nil {
			return objects, err
		}
	}
	return objects, nil
}
