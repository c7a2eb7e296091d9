package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
)

// What `make release VERSION=V` writes into dist/ (deploy/release/release.sh names them the same way).
func ReleaseFiles(version string) (image, sbom, chart string) {
	return "blocknode-image-" + version + ".oci.tar", "blocknode-image-" + version + ".cdx.json",
		"blocknode-" + version + ".tgz"
}

// The OCI annotation labels every blocknode image carries (deploy/image/build.sh). The source label only where the
// checkout's source has a public address: then it must be an http(s) URL with no user or token in it.
var requiredLabels = []string{"version", "revision", "created", "licenses", "title", "description"}

var publicURL = regexp.MustCompile(`^https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[^@\s]*)?$`)

const labelPrefix = "org.opencontainers.image."

// MavenDep is one line of `mvn dependency:list`: a dependency Maven resolved for the plugin jar.
type MavenDep struct{ Group, Artifact, Version string }

var dependencyListLine = regexp.MustCompile(`^\s+([^:\s]+):([^:\s]+):[^:\s]+:(?:[^:\s]+:)?([^:\s]+):(compile|runtime)\b`)

// ParseDependencyList reads the output file of mvn dependency:list (compile and runtime scope lines).
func ParseDependencyList(data []byte) []MavenDep {
	var deps []MavenDep
	for _, line := range strings.Split(string(data), "\n") {
		if m := dependencyListLine.FindStringSubmatch(line); m != nil {
			deps = append(deps, MavenDep{m[1], m[2], m[3]})
		}
	}
	return deps
}

// CheckRelease checks a dist/ directory made by make release against the one version and against the
// sources it was made from: chartDir (the source chart, for the sidecar images) and deps (Maven's resolved
// dependencies of the java module; blocknode's own modules in it may carry the development version). It
// returns every problem found, nil when there is none.
func CheckRelease(dist, version, chartDir string, deps []MavenDep) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	imageFile, sbomFile, chartFile := ReleaseFiles(version)

	problems = append(problems, checkSums(dist)...)

	image, err := ReadOCIArchive(filepath.Join(dist, imageFile))
	if err != nil {
		add("image: %v", err)
		return problems
	}
	repository, tag := image.RepositoryAndTag()
	if tag != version || repository == "" {
		add("image: named %q in its archive, want REPOSITORY:%s", image.RefName, version)
	}
	problems = append(problems, checkLabels(image.Labels, version)...)
	// One walk of the image's layers for the files both checks read.
	files, _, err := image.ReadFiles(func(name string) bool {
		return name == imageJar || slices.Contains(nodeIdentityFiles, name)
	})
	if err != nil {
		add("image: %v", err)
	} else {
		problems = append(problems, checkImageJar(files, version)...)
		problems = append(problems, checkNoNodeIdentity(files)...)
	}

	chartPath := filepath.Join(dist, chartFile)
	problems = append(problems, checkPackagedChart(chartPath, chartDir, version, repository, image.Digest)...)
	problems = append(problems, checkSBOM(filepath.Join(dist, sbomFile), image, version, deps)...)
	return problems
}

// checkSums: SHA256SUMS lists every other file of dist/ and each sum verifies.
func checkSums(dist string) []string {
	var problems []string
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		return []string{fmt.Sprintf("SHA256SUMS: %v", err)}
	}
	listed := map[string]bool{}
	scanner := bufio.NewScanner(bytes.NewReader(sums))
	for scanner.Scan() {
		sum, name, ok := strings.Cut(scanner.Text(), "  ")
		if !ok || len(sum) != 64 || strings.Contains(name, "/") {
			problems = append(problems, fmt.Sprintf("SHA256SUMS: malformed line %q", scanner.Text()))
			continue
		}
		listed[name] = true
		got, err := fileSHA256(filepath.Join(dist, name))
		if err != nil {
			problems = append(problems, fmt.Sprintf("SHA256SUMS: %v", err))
		} else if got != sum {
			problems = append(problems, fmt.Sprintf("SHA256SUMS: %s has sha256 %s, the list says %s", name, got, sum))
		}
	}
	entries, err := os.ReadDir(dist)
	if err != nil {
		return append(problems, err.Error())
	}
	for _, e := range entries {
		if e.Name() != "SHA256SUMS" && !listed[e.Name()] {
			problems = append(problems, fmt.Sprintf("SHA256SUMS: does not list %s", e.Name()))
		}
	}
	return problems
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

var revisionPattern = regexp.MustCompile(`^[0-9a-f]{40}(-dirty)?$`)

func checkLabels(labels map[string]string, version string) []string {
	var problems []string
	for _, key := range requiredLabels {
		if strings.TrimSpace(labels[labelPrefix+key]) == "" {
			problems = append(problems, fmt.Sprintf("image: no label %s%s", labelPrefix, key))
		}
	}
	want := map[string]string{"version": version, "licenses": "Apache-2.0", "title": "blocknode"}
	for key, value := range want {
		if got, ok := labels[labelPrefix+key]; ok && got != value {
			problems = append(problems, fmt.Sprintf("image: label %s%s is %q, want %q", labelPrefix, key, got, value))
		}
	}
	if source, ok := labels[labelPrefix+"source"]; ok && !publicURL.MatchString(source) {
		problems = append(problems, fmt.Sprintf("image: label %ssource %q is not a public http(s) URL (a local path or"+
			" a login would name the build machine's): leave it out", labelPrefix, source))
	}
	if rev, ok := labels[labelPrefix+"revision"]; ok && !revisionPattern.MatchString(rev) {
		problems = append(problems, fmt.Sprintf("image: label %srevision %q is not a git commit", labelPrefix, rev))
	}
	if created, ok := labels[labelPrefix+"created"]; ok {
		if _, err := time.Parse(time.RFC3339, created); err != nil {
			problems = append(problems, fmt.Sprintf("image: label %screated %q is not RFC 3339", labelPrefix, created))
		}
	}
	return problems
}

// nodeIdentityFiles name one node to a storage array. Debian's packages make them at install time (open-iscsi's
// postinst writes a random initiator name); baked into the image, every node running it would log in as one
// initiator whenever the host's /etc/iscsi is not mounted, and the array's ACLs would let them all in.
var nodeIdentityFiles = []string{"etc/iscsi/initiatorname.iscsi", "etc/nvme/hostnqn", "etc/nvme/hostid"}

func checkNoNodeIdentity(files map[string][]byte) []string {
	var problems []string
	for _, name := range nodeIdentityFiles {
		if _, ok := files[name]; ok {
			problems = append(problems, fmt.Sprintf("image: %s is in the image: a node's identity must come from"+
				" the host (the DaemonSet mounts it), never from the image", name))
		}
	}
	return problems
}

const imageJar = "app/blocknode.jar"

// checkImageJar: the jar in the image says the version in its manifest and in the resource GetPluginInfo's
// vendor_version comes from (dev.blocknode.Version).
func checkImageJar(files map[string][]byte, version string) []string {
	jar, ok := files[imageJar]
	if !ok {
		return []string{"image: no /app/blocknode.jar"}
	}
	zr, err := zip.NewReader(bytes.NewReader(jar), int64(len(jar)))
	if err != nil {
		return []string{fmt.Sprintf("image: /app/blocknode.jar: %v", err)}
	}
	read := func(name string) string {
		f, err := zr.Open(name)
		if err != nil {
			return ""
		}
		defer f.Close()
		data, _ := io.ReadAll(f)
		return string(data)
	}
	var problems []string
	manifest := parseManifest(read("META-INF/MANIFEST.MF"))
	if got := manifest["Implementation-Version"]; got != version {
		problems = append(problems, fmt.Sprintf("image: /app/blocknode.jar's Implementation-Version is %q, want %q", got, version))
	}
	if got := parseShellAssignments([]byte(read("blocknode-version.properties")))["version"]; got != version {
		problems = append(problems, fmt.Sprintf("image: /app/blocknode.jar's blocknode-version.properties (vendor_version) says %q, want %q", got, version))
	}
	return problems
}

func parseManifest(text string) map[string]string {
	fields := map[string]string{}
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if key, value, ok := strings.Cut(line, ": "); ok {
			fields[key] = strings.TrimSpace(value)
		}
	}
	return fields
}

func checkPackagedChart(path, sourceDir, version, repository, digest string) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf("chart: "+format, args...)) }
	chrt, err := loader.Load(path)
	if err != nil {
		return []string{fmt.Sprintf("chart: %v", err)}
	}
	if chrt.Metadata.Version != version || chrt.Metadata.AppVersion != version {
		add("version %q and appVersion %q, want %q", chrt.Metadata.Version, chrt.Metadata.AppVersion, version)
	}
	want := repository + ":" + version + "@" + digest
	if got := imageOf(chrt.Values, "image"); got != want {
		add("values' image is %q, want %q", got, want)
	}
	source, err := loader.Load(sourceDir)
	if err != nil {
		return append(problems, fmt.Sprintf("chart: source %v", err))
	}
	wantImages := map[string]bool{want: true}
	sidecars, _ := source.Values["sidecars"].(map[string]any)
	packagedSidecars, _ := chrt.Values["sidecars"].(map[string]any)
	for name := range sidecars {
		src := imageOf(sidecars, name, "image")
		if got := imageOf(packagedSidecars, name, "image"); got != src || src == "" {
			add("sidecars.%s.image is %q, the source chart's %q", name, got, src)
		}
		wantImages[src] = true
	}
	rendered, err := RenderChartChecked(path, nil)
	if err != nil {
		return append(problems, fmt.Sprintf("chart: %v", err))
	}
	gotImages := map[string]bool{}
	for _, text := range rendered {
		for _, line := range strings.Split(text, "\n") {
			if img, ok := strings.CutPrefix(strings.TrimSpace(line), "image: "); ok {
				gotImages[strings.Trim(img, `"`)] = true
			}
		}
	}
	for img := range gotImages {
		if !wantImages[img] {
			add("renders image %s, which is neither the release's nor a sidecar's", img)
		}
	}
	if !gotImages[want] {
		add("does not render the release's image %s", want)
	}
	if err := LintPackagedChart(path); err != nil {
		add("%v", err)
	}
	return problems
}

// imageOf returns repository:tag[@digest] of the image mapping at keys in values ("" when absent).
func imageOf(values map[string]any, keys ...string) string {
	var node any = values
	for _, key := range keys {
		m, ok := node.(map[string]any)
		if !ok {
			return ""
		}
		node = m[key]
	}
	m, ok := node.(map[string]any)
	if !ok {
		return ""
	}
	ref := fmt.Sprintf("%v:%v", m["repository"], m["tag"])
	if digest, _ := m["digest"].(string); digest != "" {
		ref += "@" + digest
	}
	return ref
}

func checkSBOM(path string, image *OCIImage, version string, deps []MavenDep) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf("sbom: "+format, args...)) }
	data, err := os.ReadFile(path)
	if err != nil {
		return []string{fmt.Sprintf("sbom: %v", err)}
	}
	var bom CycloneDX
	if err := json.Unmarshal(data, &bom); err != nil {
		return []string{fmt.Sprintf("sbom: %v", err)}
	}
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion == "" {
		add("not a CycloneDX document (bomFormat %q, specVersion %q)", bom.BOMFormat, bom.SpecVersion)
	}
	if c := bom.Metadata.Component; c == nil || c.Version != version ||
		!strings.Contains(c.Purl, strings.Replace(image.Digest, ":", "%3A", 1)) {
		add("metadata.component is %+v, want the image %s at %s", c, version, image.Digest)
	}
	have := map[string]bool{}
	for _, c := range bom.Components {
		if c.Name == "" || c.Version == "" || c.Purl == "" {
			add("component %+v lacks a name, version or purl", c)
		}
		have[c.Group+"/"+c.Name+"@"+c.Version] = true
	}
	files, _, err := image.ReadFiles(func(name string) bool { return name == "var/lib/dpkg/status" })
	if err != nil {
		return append(problems, fmt.Sprintf("sbom: %v", err))
	}
	packages := ParseDpkgStatus(files["var/lib/dpkg/status"])
	if len(packages) == 0 {
		add("the image's dpkg status lists no installed package")
	}
	var missing []string
	for _, p := range packages {
		if !have["/"+p.Name+"@"+p.Version] {
			missing = append(missing, "deb "+p.Name+" "+p.Version)
		}
	}
	if len(deps) == 0 {
		add("no Maven dependencies to check against")
	}
	for _, d := range append([]MavenDep{{"dev.blocknode", "blocknode", version}}, deps...) {
		v := d.Version
		if d.Group == "dev.blocknode" {
			v = version // the release builds blocknode's own modules at its version
		}
		if !have[d.Group+"/"+d.Artifact+"@"+v] {
			missing = append(missing, "maven "+d.Group+":"+d.Artifact+" "+v)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		add("no component for %s", m)
	}
	return problems
}
