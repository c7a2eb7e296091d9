package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/strvals"
	corev1 "k8s.io/api/core/v1"
)

// The user's pages' blocks this tier checks (java's DocsCommandsUnitTest holds every block to its marker and counts
// them): the YAML an operator applies, marked <!-- checked: deploy-validate -->, decoded strictly and its PVs,
// claims and Secrets held to -pv's rules; the PV files the pages' own "deploy-validate -pv" lines validate (kept by
// DocsCommandsUnitTest under testdata/doc-pvs/PAGE/); and the helm template commands marked
// <!-- checked: helm-template -->, run as helm template runs them, against this chart.

const repoRoot = "../.."

// docBlock is one fenced block of a page with the marker on the line before it (DocPage.java's grammar).
type docBlock struct {
	page, language, checker, args, text string
	line                                int
}

func (b docBlock) where() string { return fmt.Sprintf("%s:%d", b.page, b.line) }

var docMarker = regexp.MustCompile(`^<!--\s*checked:\s*(\S+)\s*(.*?)\s*-->$`)

// parseDocBlocks returns a page's blocks marked checked (the others are DocsCommandsUnitTest's).
func parseDocBlocks(page, markdown string) []docBlock {
	var blocks []docBlock
	lines := strings.Split(markdown, "\n")
	for i := 0; i < len(lines); i++ {
		stripped := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(stripped, "```") {
			continue
		}
		indent := strings.Index(lines[i], "`")
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		var text strings.Builder
		for _, l := range lines[i+1 : min(end, len(lines))] {
			cut := 0
			for cut < indent && cut < len(l) && l[cut] == ' ' {
				cut++
			}
			text.WriteString(l[cut:] + "\n")
		}
		if i > 0 {
			if m := docMarker.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				blocks = append(blocks, docBlock{page: page, line: i + 1, language: strings.TrimSpace(stripped[3:]),
					checker: m[1], args: m[2], text: text.String()})
			}
		}
		i = end
	}
	return blocks
}

// docPages reads README.md and every page under docs/, by their paths from the repository's root.
func docPages(t *testing.T) map[string]string {
	t.Helper()
	pages := map[string]string{}
	add := func(path string) {
		data, err := os.ReadFile(filepath.Join(repoRoot, path))
		if err != nil {
			t.Fatal(err)
		}
		pages[path] = string(data)
	}
	add("README.md")
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(repoRoot, path)
			add(rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// docObjects decodes a block's (or a file's) YAML; the volume kinds are returned apart, to be checked as a set.
func docObjects(source string, text []byte) (volumes, others []*Object, err error) {
	objects, err := DecodeStream(source, bytes.NewReader(text))
	for _, o := range objects {
		if volumeKinds[o.Kind] && o.Value != nil {
			volumes = append(volumes, o)
		} else {
			others = append(others, o)
		}
	}
	return volumes, others, err
}

// checkDocVolumes holds a page's PVs, claims and Secrets to -pv's rules, with the Secrets the page shows
// elsewhere: a page that shows its Secrets must name them (name and namespace) in its PVs. And a PV that names its
// LUN's WWID takes it as its handle (wwid-<WWID>), as docs/volumes.md advises.
func checkDocVolumes(objects, pageSecrets []*Object) {
	set := append(append([]*Object{}, objects...), pageSecrets...)
	checkSet(set, setOptions{driverName: defaultDriverName, secretsElsewhere: len(pageSecrets) == 0})
	for _, o := range objects {
		pv, ok := o.Value.(*corev1.PersistentVolume)
		if !ok || pv.Spec.CSI == nil {
			continue
		}
		if wwid := pv.Spec.CSI.VolumeAttributes["wwid"]; wwid != "" && pv.Spec.CSI.VolumeHandle != "wwid-"+wwid {
			o.fail("volumeHandle %q: a PV the docs show with a wwid takes wwid-%s as its handle (docs/volumes.md)",
				pv.Spec.CSI.VolumeHandle, wwid)
		}
	}
}

// pageSecrets are the Secrets of a page's deploy-validate blocks other than the one at skip.
func pageSecrets(t *testing.T, blocks []docBlock, skip int) []*Object {
	var secrets []*Object
	for _, b := range blocks {
		if b.checker != "deploy-validate" || b.line == skip {
			continue
		}
		volumes, _, _ := docObjects(b.where(), []byte(b.text))
		for _, o := range volumes {
			if o.Kind == "Secret" {
				secrets = append(secrets, o)
			}
		}
	}
	return secrets
}

func failures(objects []*Object) []string {
	var out []string
	for _, o := range objects {
		for _, e := range o.Errors {
			out = append(out, o.String()+": "+e)
		}
	}
	return out
}

func TestDocsYamlBlocksDecodeStrictlyAndKeepThePvRules(t *testing.T) {
	checked := 0
	for page, text := range docPages(t) {
		blocks := parseDocBlocks(page, text)
		for _, b := range blocks {
			if b.checker != "deploy-validate" {
				continue
			}
			checked++
			volumes, others, err := docObjects(b.where(), []byte(b.text))
			if err != nil {
				t.Errorf("%s: %v", b.where(), err)
			}
			if len(volumes)+len(others) == 0 {
				t.Errorf("%s: no object", b.where())
			}
			checkDocVolumes(volumes, pageSecrets(t, blocks, b.line))
			for _, f := range failures(append(volumes, others...)) {
				t.Errorf("%s: %s", b.where(), f)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no page has a block marked <!-- checked: deploy-validate -->: the parser or the pages changed")
	}
	t.Logf("%d YAML blocks of the docs decode strictly and keep the rules", checked)
}

// The PV files the pages' "deploy-validate -pv FILE" lines validate, as blocknode pv wrote them (DocsCommandsUnitTest).
func TestDocsPvOutputsPassWithThePagesSecrets(t *testing.T) {
	pages := docPages(t)
	root := filepath.Join("testdata", "doc-pvs")
	files := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		page, _ := filepath.Rel(root, filepath.Dir(path))
		text, ok := pages[page]
		if !ok {
			t.Errorf("%s: no page %s", path, page)
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		volumes, others, err := docObjects(path, data)
		if err != nil || len(others) > 0 || len(volumes) == 0 {
			t.Errorf("%s: want PVs, claims and Secrets only (%v)", path, err)
		}
		checkDocVolumes(volumes, pageSecrets(t, parseDocBlocks(page, text), -1))
		for _, f := range failures(volumes) {
			t.Errorf("%s (from %s): %s", path, page, f)
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Fatalf("no PV file under %s (%v): DocsCommandsUnitTest writes them (make docs)", root, err)
	}
	t.Logf("%d PV files the docs' commands print pass deploy-validate -pv", files)
}

// helmTemplate is one "helm template" command of a page, as helm's flags read it.
type helmTemplate struct {
	chart, namespace, kubeVersion string
	values                        Values
}

// parseHelmTemplate reads "helm template RELEASE CHART [flags]"; a flag this check cannot play as helm does fails.
func parseHelmTemplate(words []string) (helmTemplate, error) {
	h := helmTemplate{namespace: "default", values: Values{}}
	takes := map[string]bool{"-n": true, "--namespace": true, "--kube-version": true, "--set": true, "--set-string": true}
	var positional []string
	for i := 2; i < len(words); i++ {
		if strings.HasPrefix(words[i], ">") {
			break // the rendering's file: what helm prints, not how it renders
		}
		flag, value, inline := strings.Cut(words[i], "=")
		if !strings.HasPrefix(flag, "-") {
			positional = append(positional, words[i])
			continue
		}
		if !takes[flag] {
			return h, fmt.Errorf("flag %s is not one this check plays as helm does", words[i])
		}
		if !inline {
			if i+1 == len(words) {
				return h, fmt.Errorf("%s has no value", flag)
			}
			i++
			value = words[i]
		}
		var err error
		switch flag {
		case "-n", "--namespace":
			h.namespace = value
		case "--kube-version":
			h.kubeVersion = value
		case "--set":
			err = strvals.ParseInto(value, h.values)
		case "--set-string":
			err = strvals.ParseIntoString(value, h.values)
		}
		if err != nil {
			return h, err
		}
	}
	if len(positional) != 2 {
		return h, fmt.Errorf("want a release and a chart, got %q", positional)
	}
	h.chart = positional[1]
	return h, nil
}

// render does what helm template does with the command: refuse a Kubernetes version outside the chart's kubeVersion
// (helm's own check, against its capabilities), then render with the values (the schema enforced), decoded strictly
// and held to blocknode's rules.
func (h helmTemplate) render() error {
	if filepath.Clean(h.chart) != filepath.Join("deploy", "helm", "blocknode") {
		return fmt.Errorf("chart %s: this check renders the checkout's deploy/helm/blocknode", h.chart)
	}
	if h.namespace != ReleaseNamespace {
		return fmt.Errorf("namespace %s: the chart is checked in %s", h.namespace, ReleaseNamespace)
	}
	if err := kubeVersionAccepted(chartDir, h.kubeVersion); err != nil {
		return err
	}
	_, err := RenderChartChecked(chartDir, h.values)
	return err
}

// kubeVersionAccepted is helm's check of a chart's kubeVersion; version "" is helm's default capabilities'.
func kubeVersionAccepted(chart, version string) error {
	chrt, err := loader.Load(chart)
	if err != nil {
		return err
	}
	kube := chartutil.DefaultCapabilities.KubeVersion
	if version != "" {
		parsed, err := chartutil.ParseKubeVersion(version)
		if err != nil {
			return fmt.Errorf("--kube-version %q: %v", version, err)
		}
		kube = *parsed
	}
	if !chartutil.IsCompatibleRange(chrt.Metadata.KubeVersion, kube.String()) {
		return fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s",
			chrt.Metadata.KubeVersion, kube.String())
	}
	return nil
}

// docShellCommands cuts an sh block into commands' words: continuation lines joined, comments and quotes removed
// (helm-template blocks hold plain commands; DocsCommandsUnitTest refuses anything else in them).
func docShellCommands(text string) [][]string {
	var commands [][]string
	joined := strings.ReplaceAll(text, "\\\n", " ")
	for _, line := range strings.Split(joined, "\n") {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		var words []string
		for _, w := range strings.Fields(line) {
			words = append(words, strings.Trim(w, `'"`))
		}
		if len(words) > 0 {
			commands = append(commands, words)
		}
	}
	return commands
}

func TestDocsHelmTemplateCommandsRenderAsHelmWould(t *testing.T) {
	run := 0
	for page, text := range docPages(t) {
		for _, b := range parseDocBlocks(page, text) {
			if b.checker != "helm-template" {
				continue
			}
			for _, words := range docShellCommands(b.text) {
				run++
				h, err := parseHelmTemplate(words)
				if err == nil {
					err = h.render()
				}
				if err != nil {
					t.Errorf("%s: `%s`: %v", b.where(), strings.Join(words, " "), err)
				}
			}
		}
	}
	if run == 0 {
		t.Fatal("no page has a block marked <!-- checked: helm-template -->")
	}
	t.Logf("%d helm template commands of the docs render", run)
}

// Why the docs' helm template commands say --kube-version: without it helm takes the Kubernetes of its default
// capabilities (v1.20 in a helm built without its release's flags, as deploy/release/helm.sh builds it), which the
// chart's kubeVersion refuses. Should this pass one day, the rule in DocRules can go.
func TestHelmsDefaultKubernetesIsRefusedByTheChart(t *testing.T) {
	if err := kubeVersionAccepted(chartDir, ""); err == nil {
		t.Fatalf("helm's default Kubernetes %s meets the chart's kubeVersion", chartutil.DefaultCapabilities.KubeVersion)
	}
	if err := kubeVersionAccepted(chartDir, "1.33.0"); err != nil {
		t.Fatal(err)
	}
}

// The docs' checks refuse what they must: a PV naming its Secret in another namespace than the page's Secret, a
// handle other than the WWID, and helm template commands this check cannot play or that helm would refuse.
func TestDocsChecksRefuseMistakes(t *testing.T) {
	pv := `apiVersion: v1
kind: PersistentVolume
metadata: {name: pg-data}
spec:
  capacity: {storage: 100Gi}
  accessModes: [ReadWriteOncePod]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  csi:
    driver: block.csi.blocknode.dev
    volumeHandle: pg-data
    volumeAttributes: {targetPortal: "10.0.0.10:3260", iqn: "iqn.2005-10.org.example:storage.pg", lun: "1", wwid: "36001405abcdef0123456789abcdef012"}
    nodeStageSecretRef: {name: chap-pg, namespace: blocknode}
`
	page := "<!-- checked: deploy-validate -->\n```yaml\n" + pv + "```\n" +
		"<!-- checked: deploy-validate -->\n```yaml\napiVersion: v1\nkind: Secret\nmetadata: {name: chap-pg, namespace: kube-system}\n" +
		"stringData: {node.session.auth.username: u, node.session.auth.password: p}\n```\n"
	blocks := parseDocBlocks("page.md", page)
	if len(blocks) != 2 {
		t.Fatalf("want 2 blocks, got %d", len(blocks))
	}
	volumes, _, err := docObjects("page.md", []byte(blocks[0].text))
	if err != nil {
		t.Fatal(err)
	}
	checkDocVolumes(volumes, pageSecrets(t, blocks, blocks[0].line))
	all := strings.Join(failures(volumes), "\n")
	for _, want := range []string{"nodeStageSecretRef blocknode/chap-pg: no such Secret in this set",
		`volumeHandle "pg-data": a PV the docs show with a wwid takes wwid-36001405abcdef0123456789abcdef012`} {
		if !strings.Contains(all, want) {
			t.Errorf("want a failure %q, got:\n%s", want, all)
		}
	}
	for command, want := range map[string]string{
		"helm template blocknode deploy/helm/blocknode -n kube-system":                                  "incompatible with Kubernetes v1.20.0",
		"helm template blocknode deploy/helm/blocknode -n kube-system --kube-version 1.28.4":            "incompatible with Kubernetes v1.28.4",
		"helm template blocknode deploy/helm/blocknode --kube-version 1.33.0":                           "the chart is checked in kube-system",
		"helm template blocknode deploy/helm/blocknode -n kube-system --kube-version 1.33 -f x":         "flag -f is not one",
		"helm template blocknode deploy/helm/blocknode -n kube-system --kube-version 1.33 --set nope=1": "nope",
	} {
		h, err := parseHelmTemplate(strings.Fields(command))
		if err == nil {
			err = h.render()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want an error with %q, got %v", command, want, err)
		}
	}
}

// docs/operations.md's node-by-node upgrade gives the DaemonSet the OnDelete strategy with two values: they render a
// DaemonSet with that strategy and without the rolling update's settings (helm's null removes a default).
func TestDocsOnDeleteUpgradeValuesRender(t *testing.T) {
	const sets = "--set updateStrategy.type=OnDelete --set updateStrategy.rollingUpdate=null"
	page, err := os.ReadFile(filepath.Join(repoRoot, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), sets) {
		t.Fatalf("docs/operations.md no longer upgrades with %q: change this test with it", sets)
	}
	values := Values{}
	for _, v := range strings.Fields(strings.ReplaceAll(sets, "--set ", "")) {
		if err := strvals.ParseInto(v, values); err != nil {
			t.Fatal(err)
		}
	}
	rendered, err := RenderChartChecked(chartDir, values)
	if err != nil {
		t.Fatal(err)
	}
	ds := rendered["blocknode/templates/daemonset.yaml"]
	if !strings.Contains(ds, "  updateStrategy:\n    type: OnDelete\n") || strings.Contains(ds, "rollingUpdate") {
		t.Errorf("the DaemonSet's strategy is not OnDelete alone:\n%s", ds)
	}
}
