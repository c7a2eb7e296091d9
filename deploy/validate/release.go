package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The release modes of the validator, which deploy/release/release.sh runs (make release):
//
//	-semver V                                         exit 1 unless V is a release version
//	-package -version V -image-archive A -out DIR     package and lint the chart for the image in A
//	-sbom FILE -version V -image-archive A -maven-bom B   write the image's CycloneDX SBOM
//	-check-release DIST -version V -maven-deps F      check a dist/ directory (make test runs this)
type releaseFlags struct {
	semver       *string
	pkg          *bool
	sbom         *string
	checkRelease *string
	version      *string
	imageArchive *string
	out          *string
	mavenBOM     *string
	mavenDeps    *string
}

func addReleaseFlags() releaseFlags {
	return releaseFlags{
		semver:       flag.String("semver", "", "exit 1 unless this is a SemVer 2.0 version an image tag can carry"),
		pkg:          flag.Bool("package", false, "package and lint the chart (-version, -image-archive, -out) and print the package's path"),
		sbom:         flag.String("sbom", "", "write the CycloneDX SBOM of -image-archive to this file (-version, -maven-bom)"),
		checkRelease: flag.String("check-release", "", "check this dist/ directory (-version, -maven-deps)"),
		version:      flag.String("version", "", "the release version"),
		imageArchive: flag.String("image-archive", "", "the release's image, an OCI archive"),
		out:          flag.String("out", "", "with -package: the directory the chart package goes to"),
		mavenBOM:     flag.String("maven-bom", "", "with -sbom: cyclonedx-maven-plugin's bom.json of the java module"),
		mavenDeps:    flag.String("maven-deps", "", "with -check-release: mvn dependency:list's output file for the java module"),
	}
}

// run runs the mode asked for, if any; false when none was.
func (f releaseFlags) run(deployDir string) bool {
	chartDir := filepath.Join(deployDir, "helm", "blocknode")
	switch {
	case *f.semver != "":
		exitOn(CheckSemver(*f.semver))
	case *f.pkg:
		image := f.image()
		repository, _ := image.RepositoryAndTag()
		packaged, err := PackageChart(chartDir, ReleaseChart{Version: *f.version, Repository: repository,
			Digest: image.Digest}, *f.out)
		exitOn(err)
		fmt.Println(packaged)
	case *f.sbom != "":
		image := f.image()
		bom, err := os.ReadFile(*f.mavenBOM)
		exitOn(err)
		repository, _ := image.RepositoryAndTag()
		doc, err := BuildSBOM(ImageSBOMInput{Image: image, Repository: repository, Version: *f.version,
			MavenBOM: bom, Now: sourceDate()})
		exitOn(err)
		data, err := json.MarshalIndent(doc, "", "  ")
		exitOn(err)
		exitOn(os.WriteFile(*f.sbom, append(data, '\n'), 0o644))
		fmt.Printf("%s: %d components\n", *f.sbom, len(doc.Components))
	case *f.checkRelease != "":
		exitOn(CheckSemver(*f.version))
		data, err := os.ReadFile(*f.mavenDeps)
		exitOn(err)
		problems := CheckRelease(*f.checkRelease, *f.version, chartDir, ParseDependencyList(data))
		for _, p := range problems {
			fmt.Println("FAIL " + p)
		}
		if len(problems) > 0 {
			fmt.Printf("release %s in %s: %d problems\n", *f.version, *f.checkRelease, len(problems))
			os.Exit(1)
		}
		fmt.Printf("release %s in %s: one version everywhere, labels, SBOM, chart and SHA256SUMS check\n",
			*f.version, *f.checkRelease)
	default:
		return false
	}
	return true
}

// image reads -image-archive and checks that it is tagged -version.
func (f releaseFlags) image() *OCIImage {
	exitOn(CheckSemver(*f.version))
	image, err := ReadOCIArchive(*f.imageArchive)
	exitOn(err)
	if !strings.HasSuffix(image.RefName, ":"+*f.version) {
		exitOn(fmt.Errorf("%s holds %q, not an image tagged %s", *f.imageArchive, image.RefName, *f.version))
	}
	return image
}

// sourceDate is SOURCE_DATE_EPOCH when set (reproducible builds' convention), else now.
func sourceDate() time.Time {
	var epoch int64
	if _, err := fmt.Sscan(os.Getenv("SOURCE_DATE_EPOCH"), &epoch); err == nil {
		return time.Unix(epoch, 0)
	}
	return time.Now()
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
