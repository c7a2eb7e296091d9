package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseDpkgStatusKeepsInstalledPackagesOnly(t *testing.T) {
	status := `Package: zlib1g
Status: install ok installed
Architecture: amd64
Version: 1:1.2.13.dfsg-1
Description: compression library
 a continuation line: Version: 9

Package: gone
Status: deinstall ok config-files
Version: 1.0

Package: bash
Status: install ok installed
Architecture: amd64
Version: 5.2.15-2+b7
`
	got := ParseDpkgStatus([]byte(status))
	want := []DpkgPackage{{"bash", "5.2.15-2+b7", "amd64"}, {"zlib1g", "1:1.2.13.dfsg-1", "amd64"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseDpkgStatus = %v, want %v", got, want)
	}
}

func TestCopyrightLicensesReadsMachineReadableFilesOnly(t *testing.T) {
	dep5 := `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: e2fsprogs

Files: *
Copyright: 1993-2018 Theodore Ts'o
License: GPL-2
 This package is free software.

Files: lib/et/*
License: Expat

License: GPL-2
 On Debian systems, the full text is in /usr/share/common-licenses/GPL-2.
`
	if got, want := CopyrightLicenses([]byte(dep5)), []string{"GPL-2", "Expat"}; !reflect.DeepEqual(got, want) {
		t.Errorf("CopyrightLicenses(DEP-5) = %v, want %v", got, want)
	}
	freeForm := "This is the Debian GNU/Linux prepackaged version of kmod.\n\nLicense: LGPL-2.1+\n"
	if got := CopyrightLicenses([]byte(freeForm)); got != nil {
		t.Errorf("CopyrightLicenses(free form) = %v, want nil (not known)", got)
	}
	// Free-form files (glibc's, multipath-tools') name their licenses by the texts Debian ships.
	libc := `This is the Debian prepackaged version of the GNU C Library.

The GNU C Library is free software; ... under the terms of the GNU Lesser General Public License.
On Debian systems, the complete text of the GNU Library General Public License can be found in
` + "`/usr/share/common-licenses/LGPL-2.1'." + `
Some files are under the GPL: see /usr/share/common-licenses/GPL-2. Again /usr/share/common-licenses/LGPL-2.1.
`
	if got, want := CopyrightLicenses([]byte(libc)), []string{"LGPL-2.1", "GPL-2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("CopyrightLicenses(free form naming common licenses) = %v, want %v", got, want)
	}
}

func TestPurlEscapeEncodesEpochAndPlus(t *testing.T) {
	if got, want := purlEscape("1:2.3+dfsg-1~deb12u1"), "1%3A2.3%2Bdfsg-1~deb12u1"; got != want {
		t.Errorf("purlEscape = %q, want %q", got, want)
	}
}

func TestCheckSemver(t *testing.T) {
	for _, ok := range []string{"0.1.0", "1.2.3", "1.2.3-rc.1", "0.0.0-check"} {
		if err := CheckSemver(ok); err != nil {
			t.Errorf("CheckSemver(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1.2", "v1.2.3", "01.2.3", "1.2.3+build.5", "1.2.3 ", "latest"} {
		if err := CheckSemver(bad); err == nil {
			t.Errorf("CheckSemver(%q) accepted it", bad)
		}
	}
}

func TestSetImageValuesKeepsCommentsAndOtherImages(t *testing.T) {
	values := `# top
image:
  # where
  repository: registry.example.com/x
  tag: ""
  digest: ""
  pullPolicy: IfNotPresent
sidecars:
  a:
    image:
      repository: registry.k8s.io/a
      tag: v1
`
	set := map[string]string{"repository": "r.io/b", "tag": "1.0.0", "digest": "sha256:ab"}
	got, err := setImageValues([]byte(values), set, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(`registry.example.com/x`, `"r.io/b"`, `tag: ""`, `tag: "1.0.0"`,
		`digest: ""`, `digest: "sha256:ab"`).Replace(values)
	if string(got) != want {
		t.Errorf("setImageValues:\n%s\nwant:\n%s", got, want)
	}
	// A released chart called its repository "a placeholder"; the comment above a key is replaced.
	got, err = setImageValues([]byte(values), set, map[string]string{"repository": "published\nthere", "tag": "the release"})
	if err != nil {
		t.Fatal(err)
	}
	want = strings.NewReplacer("  # where\n  repository: registry.example.com/x", "  # published\n  # there\n  repository: \"r.io/b\"",
		`  tag: ""`, "  # the release\n  tag: \"1.0.0\"", `digest: ""`, `digest: "sha256:ab"`).Replace(values)
	if string(got) != want {
		t.Errorf("setImageValues with comments:\n%s\nwant:\n%s", got, want)
	}
	if _, err := setImageValues([]byte("image:\n  tag: x\n"), map[string]string{"digest": "d"}, nil); err == nil {
		t.Error("setImageValues set a key the image mapping lacks")
	}
}
