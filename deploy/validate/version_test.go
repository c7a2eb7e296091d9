package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
)

// Between releases the one version is Maven's ${revision} (pom.xml), X.Y.Z-SNAPSHOT, and the chart and the
// plain manifests name the release it leads to, X.Y.Z; make release sets all of them to its VERSION.
func TestSourcesNameOneVersion(t *testing.T) {
	pom, err := os.ReadFile("../../pom.xml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<revision>([^<]+)</revision>`).FindSubmatch(pom)
	if m == nil {
		t.Fatal("pom.xml has no <revision> property")
	}
	revision := string(m[1])
	next, ok := strings.CutSuffix(revision, "-SNAPSHOT")
	if !ok {
		t.Fatalf("pom.xml's revision %s is not a development version (X.Y.Z-SNAPSHOT)", revision)
	}
	if err := CheckSemver(revision); err != nil {
		t.Error(err)
	}
	chrt, err := loader.Load("../helm/blocknode")
	if err != nil {
		t.Fatal(err)
	}
	if chrt.Metadata.Version != next || chrt.Metadata.AppVersion != next {
		t.Errorf("Chart.yaml: version %s, appVersion %s; pom.xml's revision %s wants %s for both",
			chrt.Metadata.Version, chrt.Metadata.AppVersion, revision, next)
	}
	for _, f := range []string{"daemonset.yaml", "controller.yaml"} {
		data, err := os.ReadFile("../kubernetes/" + f)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range regexp.MustCompile(`image: (\S+/blocknode):(\S+)`).FindAllStringSubmatch(string(data), -1) {
			if ref[2] != next {
				t.Errorf("deploy/kubernetes/%s: image %s:%s, want the tag %s (pom.xml's revision %s)", f, ref[1], ref[2], next, revision)
			}
		}
	}
}
