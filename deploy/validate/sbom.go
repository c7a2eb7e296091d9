package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// The release's SBOM: CycloneDX JSON of blocknode's image, made from what the image holds (its Debian
// packages from dpkg's status, their licenses from the DEP-5 copyright files the image keeps, the Java
// runtime's release file) and the plugin jar's Java dependencies as Maven resolved them
// (cyclonedx-maven-plugin's bom of the java module).

// CycloneDX is the subset of a CycloneDX 1.5 BOM that blocknode writes and reads.
type CycloneDX struct {
	BOMFormat    string         `json:"bomFormat"`
	SpecVersion  string         `json:"specVersion"`
	SerialNumber string         `json:"serialNumber,omitempty"`
	Version      int            `json:"version"`
	Metadata     CDXMetadata    `json:"metadata"`
	Components   []CDXComponent `json:"components"`
}

type CDXMetadata struct {
	Timestamp string        `json:"timestamp,omitempty"`
	Component *CDXComponent `json:"component,omitempty"`
}

type CDXComponent struct {
	Type     string             `json:"type"`
	BOMRef   string             `json:"bom-ref,omitempty"`
	Group    string             `json:"group,omitempty"`
	Name     string             `json:"name"`
	Version  string             `json:"version,omitempty"`
	Purl     string             `json:"purl,omitempty"`
	Licenses []CDXLicenseChoice `json:"licenses,omitempty"`
}

type CDXLicenseChoice struct {
	License    *CDXLicense `json:"license,omitempty"`
	Expression string      `json:"expression,omitempty"`
}

type CDXLicense struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
}

// ImageSBOMInput is what BuildSBOM describes.
type ImageSBOMInput struct {
	Image      *OCIImage
	Repository string // the image's name without tag, e.g. registry.example.com/blocknode/blocknode
	Version    string // the release version: the image's tag and the plugin jar's version
	MavenBOM   []byte // cyclonedx-maven-plugin's JSON bom of the java module
	Now        time.Time
}

// BuildSBOM describes the image: metadata.component is the image itself; the components are its Debian
// packages, its Java runtime, the plugin jar and the jar's dependencies.
func BuildSBOM(in ImageSBOMInput) (*CycloneDX, error) {
	files, links, err := in.Image.ReadFiles(func(name string) bool {
		return name == "var/lib/dpkg/status" || name == "usr/lib/os-release" || name == "etc/os-release" ||
			name == "opt/java/openjdk/release" ||
			(strings.HasPrefix(name, "usr/share/doc/") && strings.HasSuffix(name, "/copyright") && strings.Count(name, "/") == 4) ||
			// A package whose documentation directory links to another's (libgcc-s1 -> gcc-12-base).
			(strings.HasPrefix(name, "usr/share/doc/") && strings.Count(name, "/") == 3)
	})
	if err != nil {
		return nil, err
	}
	status, ok := files["var/lib/dpkg/status"]
	if !ok {
		return nil, fmt.Errorf("%s: no var/lib/dpkg/status in the image", in.Image.Path)
	}
	osRelease := files["usr/lib/os-release"]
	if osRelease == nil {
		osRelease = files["etc/os-release"]
	}
	distro := debianDistro(osRelease)
	var components []CDXComponent
	for _, pkg := range ParseDpkgStatus(status) {
		c := CDXComponent{Type: "library", Name: pkg.Name, Version: pkg.Version,
			Purl: fmt.Sprintf("pkg:deb/debian/%s@%s?arch=%s%s", pkg.Name, purlEscape(pkg.Version), pkg.Architecture, distro)}
		c.BOMRef = c.Purl
		docDir := pkg.Name
		if target, ok := links["usr/share/doc/"+pkg.Name]; ok && !strings.Contains(target, "/") {
			docDir = target
		}
		for _, license := range CopyrightLicenses(files["usr/share/doc/"+docDir+"/copyright"]) {
			c.Licenses = append(c.Licenses, CDXLicenseChoice{License: &CDXLicense{Name: license}})
		}
		components = append(components, c)
	}
	if jre := files["opt/java/openjdk/release"]; jre != nil {
		fields := parseShellAssignments(jre)
		version := fields["JAVA_RUNTIME_VERSION"]
		if version == "" {
			version = fields["JAVA_VERSION"]
		}
		c := CDXComponent{Type: "framework", Name: "openjdk-runtime", Version: version,
			Purl:     "pkg:generic/openjdk@" + purlEscape(version),
			Licenses: []CDXLicenseChoice{{Expression: "GPL-2.0-only WITH Classpath-exception-2.0"}}}
		c.BOMRef = c.Purl
		components = append(components, c)
	}
	java, err := mavenComponents(in.MavenBOM, in.Version)
	if err != nil {
		return nil, err
	}
	components = append(components, java...)

	hexDigest := strings.TrimPrefix(in.Image.Digest, "sha256:")
	name := in.Repository[strings.LastIndex(in.Repository, "/")+1:]
	image := CDXComponent{Type: "container", Name: name, Version: in.Version,
		// A registry name has only letters, digits and "._-/:", which a purl qualifier value may keep.
		Purl: fmt.Sprintf("pkg:oci/%s@sha256%%3A%s?repository_url=%s&tag=%s", name, hexDigest,
			in.Repository, purlEscape(in.Version)),
		Licenses: []CDXLicenseChoice{{License: &CDXLicense{ID: "Apache-2.0"}}}}
	image.BOMRef = image.Purl
	return &CycloneDX{BOMFormat: "CycloneDX", SpecVersion: "1.5", SerialNumber: newURNUUID(), Version: 1,
		Metadata:   CDXMetadata{Timestamp: in.Now.UTC().Format(time.RFC3339), Component: &image},
		Components: components}, nil
}

// mavenComponents are the java module (the plugin jar) and its dependencies from the Maven bom, which
// must be of version (the release builds the jar and the bom in one Maven run with -Drevision).
func mavenComponents(bom []byte, version string) ([]CDXComponent, error) {
	var maven CycloneDX
	if err := json.Unmarshal(bom, &maven); err != nil {
		return nil, fmt.Errorf("the Maven bom: %w", err)
	}
	root := maven.Metadata.Component
	if root == nil || root.Name != "blocknode" || root.Version != version {
		return nil, fmt.Errorf("the Maven bom describes %+v, not blocknode %s", root, version)
	}
	if len(maven.Components) == 0 {
		return nil, fmt.Errorf("the Maven bom lists no dependencies")
	}
	var out []CDXComponent
	for _, c := range append([]CDXComponent{*root}, maven.Components...) {
		if c.Purl == "" || c.Version == "" {
			return nil, fmt.Errorf("the Maven bom's %s:%s has no purl or version", c.Group, c.Name)
		}
		out = append(out, CDXComponent{Type: "library", BOMRef: c.Purl, Group: c.Group, Name: c.Name,
			Version: c.Version, Purl: c.Purl, Licenses: c.Licenses})
	}
	return out, nil
}

// DpkgPackage is one installed package of a dpkg status file.
type DpkgPackage struct {
	Name, Version, Architecture string
}

// ParseDpkgStatus returns the installed packages ("install ok installed") of a dpkg status file, by name.
func ParseDpkgStatus(status []byte) []DpkgPackage {
	var packages []DpkgPackage
	for _, fields := range parseControlParagraphs(status) {
		if fields["Status"] != "install ok installed" || fields["Package"] == "" {
			continue
		}
		packages = append(packages, DpkgPackage{fields["Package"], fields["Version"], fields["Architecture"]})
	}
	sort.Slice(packages, func(i, j int) bool { return packages[i].Name < packages[j].Name })
	return packages
}

// commonLicense is a free-form copyright file's pointer to a license text Debian ships, whose file name is the
// license's short name (GPL-2, LGPL-2.1, Apache-2.0, BSD, Artistic...), a sentence's full stop left out.
var commonLicense = regexp.MustCompile(`/usr/share/common-licenses/([A-Za-z0-9][A-Za-z0-9.+_-]*[A-Za-z0-9+])`)

// CopyrightLicenses returns the license names of a Debian copyright file, in order of first appearance: a
// machine-readable (DEP-5) file's License fields; a free-form file's references to the license texts in
// /usr/share/common-licenses, by which such a file names its licenses (what syft reads too); nil for a free-form
// file that names none (its license is prose, not known here).
func CopyrightLicenses(copyright []byte) []string {
	paragraphs := parseControlParagraphs(copyright)
	if len(paragraphs) == 0 || !strings.Contains(paragraphs[0]["Format"], "copyright-format") &&
		!strings.Contains(paragraphs[0]["Format"], "dep5") {
		var names []string
		for _, m := range commonLicense.FindAllStringSubmatch(string(copyright), -1) {
			if !slices.Contains(names, m[1]) {
				names = append(names, m[1])
			}
		}
		return names
	}
	var names []string
	seen := map[string]bool{}
	for _, p := range paragraphs {
		name := strings.TrimSpace(strings.SplitN(p["License"], "\n", 2)[0])
		if name != "" && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return names
}

// parseControlParagraphs parses Debian control-file syntax (dpkg status, DEP-5 copyright): paragraphs
// separated by blank lines, "Field: value" with continuation lines starting with a space or tab, kept
// after a newline.
func parseControlParagraphs(data []byte) []map[string]string {
	var paragraphs []map[string]string
	current := map[string]string{}
	last := ""
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 64<<10), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case strings.TrimSpace(line) == "":
			if len(current) > 0 {
				paragraphs = append(paragraphs, current)
			}
			current, last = map[string]string{}, ""
		case line[0] == ' ' || line[0] == '\t':
			if last != "" {
				current[last] += "\n" + strings.TrimSpace(line)
			}
		case line[0] == '#':
		default:
			key, value, ok := strings.Cut(line, ":")
			if ok {
				last = key
				current[key] = strings.TrimSpace(value)
			}
		}
	}
	if len(current) > 0 {
		paragraphs = append(paragraphs, current)
	}
	return paragraphs
}

// parseShellAssignments reads KEY="value" lines (os-release, a Java runtime's release file).
func parseShellAssignments(data []byte) map[string]string {
	fields := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok {
			fields[key] = strings.Trim(value, `"'`)
		}
	}
	return fields
}

// debianDistro is the purl qualifier "&distro=debian-12" from os-release (empty when it is not Debian's).
func debianDistro(osRelease []byte) string {
	fields := parseShellAssignments(osRelease)
	if fields["ID"] != "debian" || fields["VERSION_ID"] == "" {
		return ""
	}
	return "&distro=debian-" + fields["VERSION_ID"]
}

// purlEscape percent-encodes a purl version or qualifier value: everything but letters, digits and
// ".-_~" (so a Debian epoch's ":" and a "+" are encoded).
func purlEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(".-_~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func newURNUUID() string {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		panic(err)
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
