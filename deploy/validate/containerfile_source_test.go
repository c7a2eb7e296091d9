package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// deploy/Containerfile.source builds the image from a checkout (make image-from-source, minutes and the
// network). What can drift without a build is checked here: its context sources exist in the checkout and
// are not ignored, its runtime stage installs base.sh's host tools with base.sh's excluded paths, ends as
// deploy/Containerfile does, and carries build.sh's labels.
func TestSourceContainerfileIsConsistent(t *testing.T) {
	source := read(t, filepath.Join(deployDir, "Containerfile.source"))
	instructions := instructionsOf(source)

	ignored := ignorePatterns(read(t, filepath.Join(deployDir, "Containerfile.source.dockerignore")))
	for _, in := range instructions {
		fields := strings.Fields(in)
		if (fields[0] != "COPY" && fields[0] != "ADD") || strings.HasPrefix(fields[1], "--from=") {
			continue
		}
		for _, src := range fields[1 : len(fields)-1] {
			if _, err := os.Stat(filepath.Join(deployDir, "..", src)); err != nil {
				t.Errorf("Containerfile.source %ss %s, which the checkout lacks: %v", fields[0], src, err)
			}
			for _, pattern := range ignored {
				if src != "." && (src == pattern || strings.HasPrefix(src, pattern+"/")) {
					t.Errorf("Containerfile.source.dockerignore keeps %s out of the build context", src)
				}
			}
		}
	}

	base := read(t, filepath.Join(deployDir, "image", "base.sh"))
	packages := regexp.MustCompile(`(?m)^packages=\(([^)]*)\)`).FindStringSubmatch(base)
	if packages == nil {
		t.Fatal("deploy/image/base.sh has no packages=(...) line")
	}
	want := "--no-install-recommends " + strings.Join(strings.Fields(packages[1]), " ") + " >/dev/null"
	if !strings.Contains(lastStage(instructions), want) {
		t.Errorf("the runtime stage does not install base.sh's packages as %q", want)
	}
	excluded := regexp.MustCompile(`--dpkgopt='(path-[a-z]+=[^']*)'`).FindAllStringSubmatch(base, -1)
	if len(excluded) < 5 {
		t.Fatalf("found %d path-exclude/include options in base.sh, want the manuals, docs, locales, hwdb", len(excluded))
	}
	for _, option := range excluded {
		if !strings.Contains(lastStage(instructions), "'"+option[1]+"'") {
			t.Errorf("the runtime stage lacks base.sh's dpkg option %s", option[1])
		}
	}

	// From ENV JAVA_HOME on, both files are the same but for where COPY takes a file from.
	plain := tailFrom(instructionsOf(read(t, filepath.Join(deployDir, "Containerfile"))), "ENV JAVA_HOME=")
	fromSource := tailFrom(instructions, "ENV JAVA_HOME=")
	if len(plain) < 6 || strings.Join(plain, "\n") != strings.Join(fromSource, "\n") {
		t.Errorf("Containerfile.source does not end as Containerfile does:\n%s\n---\n%s",
			strings.Join(fromSource, "\n"), strings.Join(plain, "\n"))
	}

	// The source label is left out where the checkout's source has no public address (lib.sh's source_url), which a
	// Containerfile cannot do: make image-from-source gives it on buildah's command line instead.
	for _, key := range regexp.MustCompile(`"(org\.opencontainers\.image\.[a-z]+)=`).FindAllStringSubmatch(
		read(t, filepath.Join(deployDir, "image", "build.sh")), -1) {
		if key[1] == "org.opencontainers.image.source" {
			if !strings.Contains(read(t, filepath.Join(deployDir, "image", "build-from-source.sh")),
				`--label "`+key[1]+`=$source_label"`) {
				t.Errorf("build-from-source.sh does not label the image's source as make image does")
			}
			if strings.Contains(lastStage(instructions), key[1]+"=") {
				t.Errorf("Containerfile.source labels the source itself, whether or not it has a public address")
			}
			continue
		}
		if !strings.Contains(lastStage(instructions), key[1]+"=") {
			t.Errorf("Containerfile.source lacks the label %s that make image sets", key[1])
		}
	}
	for _, want := range []string{"FROM ${DEBIAN_IMAGE} AS build", "openjdk-25-jdk-headless", "deploy/image/jre.sh"} {
		if !strings.Contains(source, want) {
			t.Errorf("Containerfile.source lacks %s", want)
		}
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// instructionsOf gives a Containerfile's instructions, continuation lines joined (runs of blanks as one),
// comments and blank lines dropped.
func instructionsOf(text string) []string {
	var out []string
	current := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if current == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, `\`) {
			current += strings.TrimSuffix(trimmed, `\`) + " "
			continue
		}
		out = append(out, strings.Join(strings.Fields(current+trimmed), " "))
		current = ""
	}
	return out
}

func lastStage(instructions []string) string {
	last := 0
	for i, in := range instructions {
		if strings.HasPrefix(in, "FROM ") {
			last = i
		}
	}
	return strings.Join(instructions[last:], "\n")
}

// tailFrom gives the instructions from the first that starts with prefix, each COPY reduced to the names of
// what it copies and where: the two files take the same files from different places.
func tailFrom(instructions []string, prefix string) []string {
	var out []string
	for _, in := range instructions {
		if out == nil && !strings.HasPrefix(in, prefix) {
			continue
		}
		fields := strings.Fields(in)
		if fields[0] == "COPY" {
			reduced := []string{"COPY"}
			for _, f := range fields[1:] {
				if !strings.HasPrefix(f, "--") {
					reduced = append(reduced, filepath.Base(f))
				}
			}
			in = strings.Join(reduced, " ")
		}
		out = append(out, in)
	}
	return out
}

// ignorePatterns gives an ignore file's patterns, without comments and "**/" prefixes.
func ignorePatterns(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, strings.TrimPrefix(line, "**/"))
		}
	}
	return out
}
