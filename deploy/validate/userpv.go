package main

import (
	"fmt"
	"os"
	"strings"
)

// ValidatePVFiles checks a user's own PersistentVolume files (hand-written, or what "blocknode pv" printed):
// every document is decoded as strictly as the deploy files, then the PVs, their claims and any Secrets in
// them are held to the same rules as the examples under deploy/kubernetes. Two things differ, since the files
// are not a whole deployment: a PV's driver is compared with driverName (the plugin's --driver-name), and a
// nodeStageSecretRef may name a Secret that is not in the files (it lives in the cluster, and it is better
// not kept beside the PVs). A document of another kind is refused: this mode is for volumes.
func ValidatePVFiles(files []string, driverName string) Report {
	var r Report
	var objects []*Object
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			r.fail("%v", err)
			continue
		}
		decoded, err := DecodeStream(file, f)
		f.Close()
		if err != nil {
			r.fail("%v", err)
		}
		objects = append(objects, decoded...)
	}
	for _, o := range objects {
		if o.Value != nil && !volumeKinds[o.Kind] {
			o.fail("a %s: -pv checks PersistentVolume, PersistentVolumeClaim and Secret documents only", o.Kind)
			o.Value = nil
		}
	}
	checkSet(objects, setOptions{driverName: driverName, secretsElsewhere: true})
	r.add(objects)
	if len(objects) == 0 && r.Failed == 0 {
		r.fail("no object in %s", strings.Join(files, ", "))
	}
	return r
}

var volumeKinds = map[string]bool{"PersistentVolume": true, "PersistentVolumeClaim": true, "Secret": true}

// pvFilesMode runs -pv: the files are the arguments after the flags.
func pvFilesMode(files []string, driverName string, quiet bool) int {
	if len(files) == 0 {
		fmt.Fprintln(os.Stderr, "-pv needs one or more files: go run . -pv my-pvs.yaml")
		return 2
	}
	report := ValidatePVFiles(files, driverName)
	for _, line := range report.Lines {
		if !quiet || line[:2] != "ok" {
			fmt.Println(line)
		}
	}
	fmt.Printf("pv: %d passed, %d failed\n", report.Passed, report.Failed)
	if report.Failed > 0 {
		return 1
	}
	return 0
}
