package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What "blocknode pv" prints for each transport, checked in by the Java side's PvCommandUnitTest (which fails
// when its output drifts from these files).
func pvFixtures(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, transport := range []string{"local", "iscsi", "fc", "nvme-tcp"} {
		files = append(files, filepath.Join("testdata", "pv", transport+".yaml"))
	}
	return files
}

func TestBlocknodePvOutputPassesForEachTransport(t *testing.T) {
	for _, file := range pvFixtures(t) {
		r := ValidatePVFiles([]string{file}, defaultDriverName)
		if r.Failed != 0 || r.Passed != 2 { // the PV and its claim
			t.Fatalf("%s: want 2 passed and 0 failed, got %d passed, %d failed:\n%s", file, r.Passed, r.Failed,
				strings.Join(r.Lines, "\n"))
		}
	}
	if r := ValidatePVFiles(pvFixtures(t), defaultDriverName); r.Failed != 0 {
		t.Fatalf("the fixtures together: %s", strings.Join(r.Lines, "\n"))
	}
}

// A copy of the iSCSI fixture with one edit, validated alone.
func editedPV(t *testing.T, driver, old, new string) Report {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "pv", "iscsi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("the fixture has no %q", old)
	}
	file := filepath.Join(t.TempDir(), "pv.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return ValidatePVFiles([]string{file}, driver)
}

func wantReportFails(t *testing.T, r Report, fragment string) {
	t.Helper()
	all := strings.Join(r.Lines, "\n")
	if r.Failed == 0 || !strings.Contains(all, fragment) {
		t.Fatalf("want a failure mentioning %q, got %d failed:\n%s", fragment, r.Failed, all)
	}
}

func TestPvFilesRejectMistakes(t *testing.T) {
	wantReportFails(t, editedPV(t, defaultDriverName, "volumeHandle:", "volumeHandel:"), `unknown field "spec.csi.volumeHandel"`)
	wantReportFails(t, editedPV(t, defaultDriverName, `"targetPortal":`, `"targetPortl":`),
		"volumeAttributes.targetPortl is not a key of the iscsi transport")
	wantReportFails(t, editedPV(t, defaultDriverName, `"iqn.2005-10.org.example:storage.pg"`, `"iqn.2005"`),
		"is not an iSCSI name")
	// What the plugin refuses only when the pod starts, and a PV cannot be edited.
	wantReportFails(t, editedPV(t, defaultDriverName, `"36001405abcdef0123456789abcdef012"`, `"3600-not-hex"`),
		`volumeAttributes.wwid "3600-not-hex" is not a WWID`)
	wantReportFails(t, editedPV(t, defaultDriverName, `"36001405abcdef0123456789abcdef012"`,
		`"36001405abcdef0123456789abcdef01"`), `is not a WWID`)
	wantReportFails(t, editedPV(t, defaultDriverName, `"iqn.2005-10.org.example:storage.pg"`,
		`"iqn.2005-10.org.EXAMPLE:storage.pg"`), "has capitals: write it in lower case")
	wantReportFails(t, editedPV(t, defaultDriverName, `"10.0.0.10:3260"`, `"10.0.0.10:70000"`),
		`volumeAttributes.targetPortal "10.0.0.10:70000" is not a portal`)
	wantReportFails(t, editedPV(t, defaultDriverName, `"lun": "1"`, `"lun": "4294967296"`),
		`volumeAttributes.lun "4294967296" is not a LUN`)
	wantReportFails(t, editedPV(t, defaultDriverName, "Retain", "Delete"), "use Retain")
	wantReportFails(t, editedPV(t, defaultDriverName, `      namespace: "blocknode"`+"\n", ""),
		"nodeStageSecretRef needs both name and namespace")
	wantReportFails(t, editedPV(t, defaultDriverName, `  volumeName: "pg-data"`, `  volumeName: "other"`),
		`no such PersistentVolume in this set`)
	wantReportFails(t, editedPV(t, "block.example.com", "volumeMode", "volumeMode"),
		`is not the deployed driver "block.example.com"`)
	wantReportFails(t, editedPV(t, defaultDriverName, "kind: PersistentVolumeClaim", "kind: ConfigMap"),
		"-pv checks PersistentVolume, PersistentVolumeClaim and Secret documents only")
}

// An encrypted volume's stage needs the passphrase from its node-stage Secret: without a nodeStageSecretRef every
// stage is refused, so the PV is; and a Secret holding the passphrase is one the plugin reads.
func TestPvFilesRefuseAnEncryptedVolumeWithoutItsSecret(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "pv", "iscsi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ref := "    nodeStageSecretRef:\n      name: \"chap-pg\"\n      namespace: \"blocknode\"\n"
	encrypted := strings.Replace(string(data), `      "wwid":`, `      "encryption": "luks2"`+"\n"+`      "wwid":`, 1)
	if !strings.Contains(encrypted, ref) || encrypted == string(data) {
		t.Fatal("the fixture changed: its Secret reference or its wwid moved")
	}
	secret := "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: chap-pg\n  namespace: blocknode\n" +
		"stringData:\n  encryptionPassphrase: x\n"
	for _, c := range []struct {
		text string
		want string
	}{
		{strings.Replace(encrypted, ref, "", 1), "volumeAttributes.encryption is luks2, but the PV has no nodeStageSecretRef"},
		{encrypted + secret, ""},
	} {
		file := filepath.Join(t.TempDir(), "pv.yaml")
		if err := os.WriteFile(file, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		r := ValidatePVFiles([]string{file}, defaultDriverName)
		if c.want != "" {
			wantReportFails(t, r, c.want)
		} else if r.Failed != 0 {
			t.Fatalf("an encrypted PV with its Secret: %s", strings.Join(r.Lines, "\n"))
		}
	}
}

// A value listing portals is read as the plugin reads it: one bracketed IPv6 portal is not a broken list.
func TestPvFilesTakeListsAsThePluginDoes(t *testing.T) {
	for _, portals := range []string{`"[fd00::6]:3260"`, `"[fd00::6]:3260,10.0.2.10"`, `"[10.0.1.10, 10.0.2.10:3261]"`,
		`"[\"10.0.1.10\", \"10.0.2.10\"]"`} {
		if r := editedPV(t, defaultDriverName, `"10.0.1.10:3260"`, portals); r.Failed != 0 {
			t.Errorf("portals %s: %s", portals, strings.Join(r.Lines, "\n"))
		}
	}
	wantReportFails(t, editedPV(t, defaultDriverName, `"10.0.1.10:3260"`, `"10.0.1.10:3260,[fd00::6"`),
		`volumeAttributes.portals "[fd00::6" is not a portal`)
}

func TestPvFilesTakeTheDriverNameGiven(t *testing.T) {
	if r := editedPV(t, "block.example.com", `"block.csi.blocknode.dev"`, `"block.example.com"`); r.Failed != 0 {
		t.Fatalf("%s", strings.Join(r.Lines, "\n"))
	}
}

func TestPvFilesNeedAnObject(t *testing.T) {
	file := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(file, []byte("# nothing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantReportFails(t, ValidatePVFiles([]string{file}, defaultDriverName), "no object in")
	wantReportFails(t, ValidatePVFiles([]string{filepath.Join(t.TempDir(), "missing.yaml")}, defaultDriverName),
		"no such file")
}
