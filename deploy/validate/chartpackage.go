package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// The released chart: helm package and helm lint --strict as Helm's own code does them (chartutil.Save is
// what `helm package` calls; lint.All is `helm lint`), with one version everywhere and the image pinned.

// ReleaseChart is what PackageChart writes into the chart it packages.
type ReleaseChart struct {
	Version    string // the chart's version and appVersion, and the image's tag: the release's one version
	Repository string // image.repository
	Digest     string // image.digest: the image's manifest digest, sha256:...
}

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// CheckSemver accepts a SemVer 2.0 version without a leading "v" (what Helm, Maven and an image tag all take).
func CheckSemver(version string) error {
	if _, err := semver.StrictNewVersion(version); err != nil {
		return fmt.Errorf("version %q is not semantic versioning (MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]): %v", version, err)
	}
	if strings.Contains(version, "+") {
		// An image tag cannot hold "+", and the chart's tag would differ from the image's.
		return fmt.Errorf("version %q has build metadata (+...), which an image tag cannot carry", version)
	}
	return nil
}

// PackageChart packages the chart in dir into outDir as NAME-VERSION.tgz with r's version, appVersion and
// image, lints the packaged chart (warnings fail, as with --strict) and returns the package's path. The
// values.yaml in the package is the source's with only image.repository, image.tag and image.digest
// changed, its comments kept (users read them: helm show values).
func PackageChart(dir string, r ReleaseChart, outDir string) (string, error) {
	if err := CheckSemver(r.Version); err != nil {
		return "", err
	}
	if !digestPattern.MatchString(r.Digest) {
		return "", fmt.Errorf("image digest %q is not sha256:<64 hex>", r.Digest)
	}
	chrt, err := loader.Load(dir)
	if err != nil {
		return "", fmt.Errorf("loading chart %s: %w", dir, err)
	}
	chrt.Metadata.Version = r.Version
	chrt.Metadata.AppVersion = r.Version
	replaced := false
	for _, f := range chrt.Raw {
		if f.Name != chartutil.ValuesfileName {
			continue
		}
		f.Data, err = setImageValues(f.Data, map[string]string{
			"repository": r.Repository, "tag": r.Version, "digest": r.Digest}, releaseImageComments)
		if err != nil {
			return "", fmt.Errorf("%s/values.yaml: %w", dir, err)
		}
		if chrt.Values, err = chartutil.ReadValues(f.Data); err != nil {
			return "", fmt.Errorf("%s/values.yaml after setting the image: %w", dir, err)
		}
		replaced = true
	}
	if !replaced {
		return "", fmt.Errorf("chart %s has no values.yaml", dir)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	packaged, err := chartutil.Save(chrt, outDir)
	if err != nil {
		return "", fmt.Errorf("packaging %s: %w", dir, err)
	}
	if err := LintPackagedChart(packaged); err != nil {
		os.Remove(packaged)
		return "", err
	}
	return packaged, nil
}

// LintPackagedChart runs helm lint --strict on a packaged chart (.tgz), as `helm lint` does: expanded into
// a temporary directory, rendered in the namespace the chart is installed to.
func LintPackagedChart(packaged string) error {
	tmp, err := os.MkdirTemp("", "blocknode-lint-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := chartutil.ExpandFile(tmp, packaged); err != nil {
		return fmt.Errorf("expanding %s: %w", packaged, err)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil || len(entries) != 1 {
		return fmt.Errorf("%s does not hold one chart directory", packaged)
	}
	linter := lint.All(filepath.Join(tmp, entries[0].Name()), nil, ReleaseNamespace, true)
	var problems []string
	for _, m := range linter.Messages {
		if m.Severity >= support.WarningSev {
			problems = append(problems, m.Error())
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("helm lint %s:\n  %s", packaged, strings.Join(problems, "\n  "))
	}
	return nil
}

// releaseImageComments describe the image values as a release sets them: the source chart's comments are for a
// chart installed from the checkout (its repository "a placeholder", its tag "empty: the appVersion"), which a
// user reading `helm show values` of a release would take for the release's.
var releaseImageComments = map[string]string{
	"repository": "Where this release's image was published (make release IMAGE_REPOSITORY=..., make publish);\n" +
		"with the tag and digest below it names exactly that image. Copied to another registry\n" +
		"(skopeo copy --preserve-digests): its name there.",
	"tag":    "This release's version: the image's tag, the chart's version and appVersion.",
	"digest": "This release's image, pinned by its manifest digest after the tag; \"\" for an image rebuilt from the checkout.",
}

// setImageValues rewrites the keys of the top-level "image:" mapping of a values.yaml text, each of which
// must already be there, keeping every other line as it is; a key with an entry in comments gets that text
// (its lines) as the comment above it instead of the comment lines that were there.
func setImageValues(values []byte, set, comments map[string]string) ([]byte, error) {
	var out []string
	inImage := false
	done := map[string]bool{}
	for _, line := range strings.Split(string(values), "\n") {
		if line != "" && line[0] != ' ' && line[0] != '#' {
			inImage = line == "image:"
		} else if inImage {
			for key, value := range set {
				if !strings.HasPrefix(line, "  "+key+":") {
					continue
				}
				line = "  " + key + ": " + strconv.Quote(value)
				done[key] = true
				if comment, ok := comments[key]; ok {
					for len(out) > 0 && strings.HasPrefix(out[len(out)-1], "  #") {
						out = out[:len(out)-1]
					}
					for _, text := range strings.Split(comment, "\n") {
						out = append(out, "  # "+text)
					}
				}
			}
		}
		out = append(out, line)
	}
	for key := range set {
		if !done[key] {
			return nil, fmt.Errorf("no image.%s line to set", key)
		}
	}
	return []byte(strings.Join(out, "\n")), nil
}
