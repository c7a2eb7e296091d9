package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
)

// A release made here from a small synthetic image (what make release makes from the real one), checked
// by CheckRelease; then each way a release can be wrong, which CheckRelease must name.

const testRepository = "registry.example.com/blocknode/blocknode"

var testLabels = map[string]string{
	"org.opencontainers.image.title":       "blocknode",
	"org.opencontainers.image.description": "test",
	"org.opencontainers.image.source":      "https://example.com/blocknode",
	"org.opencontainers.image.licenses":    "Apache-2.0",
	"org.opencontainers.image.created":     "2026-01-02T03:04:05Z",
	"org.opencontainers.image.revision":    strings.Repeat("a", 40),
}

var testDeps = []MavenDep{{"dev.blocknode", "blocknode-proto", "0.1.0-SNAPSHOT"}, {"io.grpc", "grpc-api", "1.85.1"}}

type testImage struct {
	version    string // the tag, the version label and the jar's versions
	jarVersion string
	labels     map[string]string
	extra      map[string]string // more files in the image's root
}

func (ti testImage) files(t *testing.T) map[string][]byte {
	var jar bytes.Buffer
	zw := zip.NewWriter(&jar)
	for name, text := range map[string]string{
		"META-INF/MANIFEST.MF":         "Manifest-Version: 1.0\r\nImplementation-Version: " + ti.jarVersion + "\r\n",
		"blocknode-version.properties": "version=" + ti.jarVersion + "\n",
	} {
		w, _ := zw.Create(name)
		w.Write([]byte(text))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"var/lib/dpkg/status": []byte("Package: bash\nStatus: install ok installed\nArchitecture: amd64\nVersion: 5.2.15-2+b7\n\n" +
			"Package: kmod\nStatus: install ok installed\nArchitecture: amd64\nVersion: 30+20221128-1\n"),
		"usr/share/doc/bash/copyright": []byte("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nFiles: *\nLicense: GPL-3+\n"),
		// kmod's documentation directory is a link to libkmod2's, as in Debian 12.
		"usr/share/doc/libkmod2/copyright": []byte("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nFiles: *\nLicense: LGPL-2.1+\n"),
		"usr/lib/os-release":               []byte("ID=debian\nVERSION_ID=\"12\"\n"),
		"opt/java/openjdk/release":         []byte("JAVA_VERSION=\"25.0.3\"\nJAVA_RUNTIME_VERSION=\"25.0.3+9-LTS\"\n"),
		"app/blocknode.jar":                jar.Bytes(),
	}
	for name, text := range ti.extra {
		files[name] = []byte(text)
	}
	return files
}

// writeOCIArchive writes an OCI archive as buildah push oci-archive: does: index.json naming the image,
// manifest, config with labels, one gzip layer; returns its manifest digest.
func (ti testImage) writeOCIArchive(t *testing.T, path string) string {
	var layer bytes.Buffer
	gz := gzip.NewWriter(&layer)
	tw := tar.NewWriter(gz)
	for name, data := range ti.files(t) {
		tw.WriteHeader(&tar.Header{Name: "./" + name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write(data)
	}
	tw.WriteHeader(&tar.Header{Name: "./usr/share/doc/kmod", Linkname: "libkmod2", Mode: 0o777, Typeflag: tar.TypeSymlink})
	tw.Close()
	gz.Close()
	labels := map[string]string{"org.opencontainers.image.version": ti.version}
	for k, v := range ti.labels {
		labels[k] = v
	}
	config, _ := json.Marshal(map[string]any{"config": map[string]any{"Labels": labels}})
	blobs := map[string][]byte{}
	add := func(data []byte) string {
		sum := sha256.Sum256(data)
		digest := "sha256:" + hex.EncodeToString(sum[:])
		blobs[blobPath(digest)] = data
		return digest
	}
	layerDigest, configDigest := add(layer.Bytes()), add(config)
	manifest, _ := json.Marshal(map[string]any{"schemaVersion": 2,
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": configDigest},
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layerDigest}}})
	manifestDigest := add(manifest)
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []any{map[string]any{
		"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifestDigest,
		"annotations": map[string]string{"org.opencontainers.image.ref.name": testRepository + ":" + ti.version}}}})
	blobs["index.json"] = index
	blobs["oci-layout"] = []byte(`{"imageLayoutVersion":"1.0.0"}`)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := tar.NewWriter(f)
	for name, data := range blobs {
		out.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		out.Write(data)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return manifestDigest
}

func testMavenBOM(version string) []byte {
	bom, _ := json.Marshal(CycloneDX{BOMFormat: "CycloneDX", SpecVersion: "1.5", Version: 1,
		Metadata: CDXMetadata{Component: &CDXComponent{Type: "library", Group: "dev.blocknode", Name: "blocknode",
			Version: version, Purl: "pkg:maven/dev.blocknode/blocknode@" + version + "?type=jar"}},
		Components: []CDXComponent{
			{Type: "library", Group: "dev.blocknode", Name: "blocknode-proto", Version: version,
				Purl: "pkg:maven/dev.blocknode/blocknode-proto@" + version + "?type=jar"},
			{Type: "library", Group: "io.grpc", Name: "grpc-api", Version: "1.85.1",
				Purl:     "pkg:maven/io.grpc/grpc-api@1.85.1?type=jar",
				Licenses: []CDXLicenseChoice{{License: &CDXLicense{ID: "Apache-2.0"}}}}}})
	return bom
}

// makeTestRelease does what deploy/release/release.sh does after the Maven build and the image build.
func makeTestRelease(t *testing.T, ti testImage, chartVersion string) string {
	dist := t.TempDir()
	imageFile, sbomFile, _ := ReleaseFiles(ti.version)
	archive := filepath.Join(dist, imageFile)
	digest := ti.writeOCIArchive(t, archive)
	image, err := ReadOCIArchive(archive)
	if err != nil {
		t.Fatal(err)
	}
	if image.Digest != digest || image.RefName != testRepository+":"+ti.version {
		t.Fatalf("ReadOCIArchive: %s %s, want %s %s", image.RefName, image.Digest, testRepository, digest)
	}
	bom, err := BuildSBOM(ImageSBOMInput{Image: image, Repository: testRepository, Version: ti.version,
		MavenBOM: testMavenBOM(ti.version), Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(bom)
	if err := os.WriteFile(filepath.Join(dist, sbomFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	packaged, err := PackageChart("../helm/blocknode", ReleaseChart{Version: chartVersion, Repository: testRepository,
		Digest: digest}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, _, chartFile := ReleaseFiles(ti.version)
	if err := os.Rename(packaged, filepath.Join(dist, chartFile)); err != nil {
		t.Fatal(err)
	}
	writeSums(t, dist)
	return dist
}

func writeSums(t *testing.T, dist string) {
	entries, _ := os.ReadDir(dist)
	var sums strings.Builder
	for _, e := range entries {
		if e.Name() == "SHA256SUMS" {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dist, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sums, "%s  %s\n", sum, e.Name())
	}
	if err := os.WriteFile(filepath.Join(dist, "SHA256SUMS"), []byte(sums.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func goodImage() testImage {
	return testImage{version: "1.2.3", jarVersion: "1.2.3", labels: testLabels}
}

func TestReleaseChecksOut(t *testing.T) {
	dist := makeTestRelease(t, goodImage(), "1.2.3")
	if problems := CheckRelease(dist, "1.2.3", "../helm/blocknode", testDeps); len(problems) > 0 {
		t.Fatalf("CheckRelease of a good release:\n%s", strings.Join(problems, "\n"))
	}
	_, sbomFile, chartFile := ReleaseFiles("1.2.3")
	// The released chart's values described the image as the checkout's chart does ("a placeholder").
	chrt, err := loader.Load(filepath.Join(dist, chartFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range chrt.Raw {
		if f.Name == "values.yaml" && (strings.Contains(strings.ToLower(string(f.Data)), "placeholder") ||
			!strings.Contains(string(f.Data), "# Where this release's image was published")) {
			t.Errorf("the released chart's values.yaml still describes the checkout's image:\n%s", f.Data)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dist, sbomFile))
	for _, want := range []string{`"pkg:deb/debian/bash@5.2.15-2%2Bb7?arch=amd64\u0026distro=debian-12"`, `"GPL-3+"`, `"LGPL-2.1+"`,
		`"pkg:maven/io.grpc/grpc-api@1.85.1?type=jar"`, `"openjdk-runtime"`, `"25.0.3+9-LTS"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the SBOM lacks %s:\n%s", want, data)
		}
	}
}

// A clone whose origin is a local path (CI's, the test tiers') has no source label, and that is no problem.
func TestReleaseWithoutASourceLabelChecksOut(t *testing.T) {
	image := goodImage()
	image.labels = map[string]string{}
	for k, v := range testLabels {
		if k != "org.opencontainers.image.source" {
			image.labels[k] = v
		}
	}
	dist := makeTestRelease(t, image, "1.2.3")
	if problems := CheckRelease(dist, "1.2.3", "../helm/blocknode", testDeps); len(problems) > 0 {
		t.Fatalf("CheckRelease of a release without a source label:\n%s", strings.Join(problems, "\n"))
	}
}

func TestReleaseCheckNamesEachDisagreement(t *testing.T) {
	without := func(key string) map[string]string {
		labels := map[string]string{}
		for k, v := range testLabels {
			if k != key {
				labels[k] = v
			}
		}
		return labels
	}
	cases := []struct {
		name  string
		image testImage
		chart string
		deps  []MavenDep
		spoil func(dist string)
		want  string
	}{
		{name: "label missing", image: testImage{"1.2.3", "1.2.3", without("org.opencontainers.image.revision"), nil},
			want: "image: no label org.opencontainers.image.revision"},
		{name: "license label", image: testImage{"1.2.3", "1.2.3", func() map[string]string {
			l := without("org.opencontainers.image.licenses")
			l["org.opencontainers.image.licenses"] = "MIT"
			return l
		}(), nil}, want: `label org.opencontainers.image.licenses is "MIT"`},
		// The source label named the build machine's clone.
		{name: "source label a local path", image: testImage{"1.2.3", "1.2.3", func() map[string]string {
			l := without("org.opencontainers.image.source")
			l["org.opencontainers.image.source"] = "/root/blocknode"
			return l
		}(), nil}, want: `label org.opencontainers.image.source "/root/blocknode" is not a public http(s) URL`},
		{name: "source label with a login", image: testImage{"1.2.3", "1.2.3", func() map[string]string {
			l := without("org.opencontainers.image.source")
			l["org.opencontainers.image.source"] = "https://dev:token@git.example.com/blocknode"
			return l
		}(), nil}, want: `label org.opencontainers.image.source "https://dev:token@git.example.com/blocknode" is not a public`},
		{name: "jar at another version", image: testImage{"1.2.3", "1.2.3-SNAPSHOT", testLabels, nil},
			want: `Implementation-Version is "1.2.3-SNAPSHOT"`},
		{name: "an initiator name baked in", image: testImage{"1.2.3", "1.2.3", testLabels,
			map[string]string{"etc/iscsi/initiatorname.iscsi": "InitiatorName=iqn.1993-08.org.debian:01:abcdef\n"}},
			want: "image: etc/iscsi/initiatorname.iscsi is in the image"},
		{name: "chart at another version", image: goodImage(), chart: "1.2.4",
			want: `chart: version "1.2.4" and appVersion "1.2.4", want "1.2.3"`},
		{name: "SBOM lacks a dependency", image: goodImage(),
			deps: append(append([]MavenDep{}, testDeps...), MavenDep{"io.grpc", "grpc-core", "1.85.1"}),
			want: "sbom: no component for maven io.grpc:grpc-core 1.85.1"},
		{name: "SHA256SUMS does not verify", image: goodImage(), spoil: func(dist string) {
			_, sbomFile, _ := ReleaseFiles("1.2.3")
			f, _ := os.OpenFile(filepath.Join(dist, sbomFile), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(" ")
			f.Close()
		}, want: "SHA256SUMS: blocknode-image-1.2.3.cdx.json has sha256"},
		{name: "file not in SHA256SUMS", image: goodImage(), spoil: func(dist string) {
			os.WriteFile(filepath.Join(dist, "extra.txt"), nil, 0o644)
		}, want: "SHA256SUMS: does not list extra.txt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chart := c.chart
			if chart == "" {
				chart = c.image.version
			}
			deps := c.deps
			if deps == nil {
				deps = testDeps
			}
			dist := makeTestRelease(t, c.image, chart)
			if c.spoil != nil {
				c.spoil(dist)
			}
			problems := CheckRelease(dist, "1.2.3", "../helm/blocknode", deps)
			if !strings.Contains(strings.Join(problems, "\n"), c.want) {
				t.Errorf("CheckRelease found:\n%s\nwant a problem containing %q", strings.Join(problems, "\n"), c.want)
			}
		})
	}
}

func TestSBOMRefusesAMavenBOMOfAnotherVersion(t *testing.T) {
	dist := t.TempDir()
	archive := filepath.Join(dist, "image.oci.tar")
	goodImage().writeOCIArchive(t, archive)
	image, err := ReadOCIArchive(archive)
	if err != nil {
		t.Fatal(err)
	}
	_, err = BuildSBOM(ImageSBOMInput{Image: image, Repository: testRepository, Version: "1.2.3",
		MavenBOM: testMavenBOM("0.1.0-SNAPSHOT"), Now: time.Unix(0, 0)})
	if err == nil || !strings.Contains(err.Error(), "not blocknode 1.2.3") {
		t.Errorf("BuildSBOM with a 0.1.0-SNAPSHOT Maven bom: %v", err)
	}
}

// A registry's port is part of the repository: make release IMAGE_REPOSITORY=host:port/... once packaged a chart
// whose image.repository was the host alone.
func TestImageRepositoryKeepsTheRegistrysPort(t *testing.T) {
	for ref, want := range map[string][2]string{
		"127.0.0.1:5000/blocknode/blocknode:1.2.3":             {"127.0.0.1:5000/blocknode/blocknode", "1.2.3"},
		"registry.example.com/blocknode/blocknode:0.0.0-check": {"registry.example.com/blocknode/blocknode", "0.0.0-check"},
		"localhost:5000/blocknode":                             {"localhost:5000/blocknode", ""},
		"blocknode:1.2.3":                                      {"blocknode", "1.2.3"},
	} {
		repository, tag := (&OCIImage{RefName: ref}).RepositoryAndTag()
		if repository != want[0] || tag != want[1] {
			t.Errorf("%s: repository %q tag %q, want %q %q", ref, repository, tag, want[0], want[1])
		}
	}
}
