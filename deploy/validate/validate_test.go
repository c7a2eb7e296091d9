package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/strvals"
	appsv1 "k8s.io/api/apps/v1"
	storagev1 "k8s.io/api/storage/v1"
)

const (
	deployDir = ".."
	chartDir  = "../helm/blocknode"
)

// The repository's own files pass: the same run as "make validate-deploy".
func TestDeployDirectoryPasses(t *testing.T) {
	r := Validate(deployDir)
	if r.Failed != 0 || r.Passed < 19 {
		t.Fatalf("want 0 failed and at least 19 passed, got %d passed, %d failed:\n%s",
			r.Passed, r.Failed, strings.Join(r.Lines, "\n"))
	}
}

func decodeOne(t *testing.T, doc string) *Object {
	t.Helper()
	objs, err := DecodeStream("test", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 {
		t.Fatalf("want 1 object, got %d", len(objs))
	}
	return objs[0]
}

func wantRejected(t *testing.T, o *Object, fragments ...string) {
	t.Helper()
	all := strings.Join(o.Errors, "\n")
	if len(o.Errors) == 0 {
		t.Fatalf("%s was accepted; want an error containing %q", o, fragments)
	}
	for _, f := range fragments {
		if !strings.Contains(all, f) {
			t.Fatalf("errors of %s do not mention %q:\n%s", o, f, all)
		}
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deployDir, "kubernetes", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// replaceOnce fails the test if old is not in s exactly once, so a test cannot pass by editing nothing.
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if n := strings.Count(s, old); n != 1 {
		t.Fatalf("%q occurs %d times, want once", old, n)
	}
	return strings.Replace(s, old, new, 1)
}

// The negative test asked for: a misspelled field in a real manifest is an error, with the field's path.
func TestMisspelledFieldIsRejected(t *testing.T) {
	ds := replaceOnce(t, readFile(t, "daemonset.yaml"), "      hostNetwork: true", "      hostNetwrok: true")
	wantRejected(t, decodeOne(t, ds), `unknown field "spec.template.spec.hostNetwrok"`)

	nested := replaceOnce(t, readFile(t, "daemonset.yaml"), "mountPropagation: Bidirectional", "mountPropogation: Bidirectional")
	wantRejected(t, decodeOne(t, nested), `unknown field "spec.template.spec.containers[0].volumeMounts[1].mountPropogation"`)
}

// The other negative test asked for: a kind the validator does not know is an error.
func TestUnknownKindIsRejected(t *testing.T) {
	wantRejected(t, decodeOne(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"),
		`unknown kind "Widget"`)
	// A real Kubernetes kind that is no part of this deployment is unknown as well.
	wantRejected(t, decodeOne(t, "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: d\n"),
		`unknown kind "StatefulSet"`)
	// RBAC beyond roles and their bindings (the attacher's) is not needed by anything in the deployment.
	wantRejected(t, decodeOne(t, "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBindingTemplate\nmetadata:\n  name: r\n"),
		`unknown kind "ClusterRoleBindingTemplate"`)
	// So is a known kind under the wrong apiVersion.
	wantRejected(t, decodeOne(t, "apiVersion: storage.k8s.io/v1beta1\nkind: CSIDriver\nmetadata:\n  name: x\n"),
		`unknown kind "CSIDriver" in apiVersion "storage.k8s.io/v1beta1"`)
}

// encoding/json would accept "hostnetwork" for hostNetwork; the API server does not, and neither do we.
func TestWrongLetterCaseIsRejected(t *testing.T) {
	ds := replaceOnce(t, readFile(t, "daemonset.yaml"), "      hostNetwork: true", "      hostnetwork: true")
	wantRejected(t, decodeOne(t, ds), `unknown field "spec.template.spec.hostnetwork"`)
}

func TestDuplicateKeyIsRejected(t *testing.T) {
	sa := readFile(t, "serviceaccount.yaml") + "automountServiceAccountToken: true\n"
	wantRejected(t, decodeOne(t, sa), "automountServiceAccountToken")
}

func TestWrongTypeIsRejected(t *testing.T) {
	ds := replaceOnce(t, readFile(t, "daemonset.yaml"), "terminationGracePeriodSeconds: 45", `terminationGracePeriodSeconds: "45"`)
	wantRejected(t, decodeOne(t, ds), "terminationGracePeriodSeconds")
}

// checkEdited decodes deploy/kubernetes with one file edited (pairs of old and new text, each old found
// exactly once), runs the rules, and returns every error.
func checkEdited(t *testing.T, file string, edits ...string) string {
	t.Helper()
	root := filepath.Join(deployDir, "kubernetes")
	var paths []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	var objects []*Object
	edited := false
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		content := string(data)
		if rel, _ := filepath.Rel(root, p); rel == file {
			for i := 0; i+1 < len(edits); i += 2 {
				content = replaceOnce(t, content, edits[i], edits[i+1])
			}
			edited = true
		}
		objs, err := DecodeStream(p, strings.NewReader(content))
		if err != nil {
			t.Fatal(err)
		}
		objects = append(objects, objs...)
	}
	if !edited {
		t.Fatalf("no file %s", file)
	}
	Check(objects)
	var errs []string
	for _, o := range objects {
		for _, e := range o.Errors {
			errs = append(errs, o.String()+": "+e)
		}
	}
	return strings.Join(errs, "\n")
}

// Each of blocknode's own rules catches the mistake it is there for.
func TestRulesCatchBrokenDeployments(t *testing.T) {
	cases := []struct {
		name, file, old, new, want string
	}{
		{"kubelet root not Bidirectional", "daemonset.yaml", "mountPropagation: Bidirectional",
			"mountPropagation: HostToContainer", "mountPropagation Bidirectional"},
		{"plugin not privileged", "daemonset.yaml", "privileged: true", "privileged: false", "must be privileged"},
		{"registration path of another driver", "daemonset.yaml",
			"- --kubelet-registration-path=/var/lib/kubelet/plugins/block.csi.blocknode.dev/csi.sock\n            # How long",
			"- --kubelet-registration-path=/var/lib/kubelet/plugins/other.example.com/csi.sock\n            # How long",
			"--kubelet-registration-path must be /var/lib/kubelet/plugins/block.csi.blocknode.dev/csi.sock"},
		{"CSIDriver name differs from --driver-name", "csidriver.yaml", "name: block.csi.blocknode.dev",
			"name: block.csi.example.com", `does not match the plugin's --driver-name "block.csi.blocknode.dev"`},
		{"PV of another driver", "examples/fc-filesystem.yaml", "driver: block.csi.blocknode.dev",
			"driver: fc.csi.example.com", `spec.csi.driver "fc.csi.example.com" is not the deployed driver`},
		{"container without requests", "daemonset.yaml", "              cpu: 20m\n", "", "container blocknode has no cpu request"},
		{"attach required without the controller side", "controller.yaml", "--mode=controller", "--mode=node",
			"attachRequired is true but the set deploys no controller side"},
		{"SELinux mount opt-in lost", "csidriver.yaml", "  seLinuxMount: true\n", "", "seLinuxMount must be set"},
		{"controller side without attach required", "csidriver.yaml", "attachRequired: true", "attachRequired: false",
			"attachRequired is false but the set deploys the controller side"},
		{"controller for another driver", "controller.yaml", "--driver-name=block.csi.blocknode.dev",
			"--driver-name=other.example.com", `--driver-name "other.example.com" is not the deployed driver`},
		{"controller without the attacher", "controller.yaml", "image: registry.k8s.io/sig-storage/csi-attacher:v4.12.0",
			"image: registry.k8s.io/sig-storage/csi-provisioner:v4.12.0", "no external-attacher container"},
		{"attacher on another socket", "controller.yaml", "--csi-address=/csi/csi.sock", "--csi-address=/run/csi/socket",
			"--csi-address /run/csi/socket is not the plugin's socket"},
		{"controller privileged", "controller.yaml", "            readOnlyRootFilesystem: true\n            capabilities:\n              drop: [ALL]\n          resources:\n            # The same",
			"            privileged: true\n          resources:\n            # The same", "container blocknode is privileged"},
		{"attacher without its token", "controller.yaml", "automountServiceAccountToken: true", "automountServiceAccountToken: false",
			"needs its API token"},
		{"attacher cannot mark attachments", "controller-rbac.yaml",
			"  - apiGroups: [storage.k8s.io]\n    resources: [volumeattachments/status]\n    verbs: [patch]\n", "",
			"may not patch volumeattachments/status.storage.k8s.io"},
		{"no lease for leader election", "controller-rbac.yaml", "resources: [leases]", "resources: [configmaps]",
			"may not get leases.coordination.k8s.io in kube-system (--leader-election needs it)"},
		{"wildcard grant", "controller-rbac.yaml", "verbs: [patch]\n", "verbs: [\"*\"]\n", "a wildcard grant"},
		{"attacher may read secrets", "controller-rbac.yaml", "resources: [csinodes]", "resources: [csinodes, secrets]",
			"grants access to secrets"},
		{"binding to a user", "controller-rbac.yaml", "  - kind: ServiceAccount\n    name: blocknode-controller\n    namespace: kube-system\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n",
			"  - kind: User\n    name: alice\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n", "binds User /alice"},
		{"misspelled volume attribute", "examples/iscsi-block.yaml", "      portals: 198.51.100.10:3260",
			"      portal: 198.51.100.10:3260", "volumeAttributes.portal is not a key of the iscsi transport"},
		{"duplicate volumeHandle", "examples/fc-wwids-block.yaml", "volumeHandle: wwid-3600a098038314e35362b4f6e55627a31",
			"volumeHandle: wwid-36001405f3d2a1b0c4e5f60718293a4b5", "handles must be unique"},
		{"grace period not above --shutdown-grace", "daemonset.yaml", "terminationGracePeriodSeconds: 45",
			"terminationGracePeriodSeconds: 30", "longer than --shutdown-grace"},
		{"no hostIPC", "daemonset.yaml", "hostIPC: true", "hostIPC: false", "hostIPC must be true"},
		{"no hostNetwork", "daemonset.yaml", "hostNetwork: true", "hostNetwork: false", "hostNetwork must be true"},
		{"liveness probe on the wrong port", "daemonset.yaml", "--http-endpoint=127.0.0.1:9808",
			"--http-endpoint=127.0.0.1:9809", "must GET /healthz on port 9809"},
		{"stage secret missing", "examples/iscsi-filesystem.yaml", "name: blocknode-chap-db1\n  namespace: kube-system\ntype",
			"name: blocknode-chap-other\n  namespace: kube-system\ntype", "nodeStageSecretRef kube-system/blocknode-chap-db1: no such Secret"},
		{"block volume mounted as a filesystem", "examples/iscsi-block.yaml", "volumeDevices:\n        - name: raw\n          devicePath: /dev/xvda",
			"volumeMounts:\n        - name: raw\n          mountPath: /data", "use volumeDevices"},
		{"claim left to the default StorageClass", "examples/fc-filesystem.yaml", "spec:\n  storageClassName: \"\"\n  volumeName",
			"spec:\n  volumeName", "storageClassName must be set"},
		{"unpinned image", "daemonset.yaml", "livenessprobe:v2.19.0", "livenessprobe:latest", "is not pinned"},
		{"kubelet gives up before livenessprobe answers", "daemonset.yaml", "timeoutSeconds: 5\n",
			"timeoutSeconds: 3\n", "timeoutSeconds (3s) must be longer than liveness-probe's --probe-timeout (3s)"},
		{"registrar gives up after upstream's 1s", "daemonset.yaml", "            - --timeout=30s\n", "",
			"--timeout (1s) must be at least 10s"},
		{"registrar timeout not a duration", "daemonset.yaml", "--timeout=30s", "--timeout=30",
			`--timeout "30" is not a positive duration`},
		{"probe timeout not a duration", "daemonset.yaml", "--probe-timeout=3s", "--probe-timeout=3",
			`--probe-timeout "3" is not a positive duration`},
		{"NVMe portal by name", "examples/nvme-tcp-filesystem.yaml", "nvmePortals: 192.0.2.20:4420,",
			"nvmePortals: array.example.com:4420,", `volumeAttributes.nvmePortals "array.example.com:4420" is not a portal`},
		{"NVMe namespace without identity", "examples/nvme-tcp-filesystem.yaml",
			"      namespaceNGUID: 6b8f0c1d-2e3f-4051-6273-849506a7b8c9\n", "", "needs namespaceNGUID, namespaceEUI64 or namespaceUUID"},
		{"fencing value misspelled", "examples/iscsi-filesystem.yaml", "fencing: required", "fencing: always",
			`volumeAttributes.fencing "always" is not one the iscsi transport takes (auto, off, required)`},
		{"NVMe fencing required", "examples/nvme-tcp-filesystem.yaml", "      transport: nvme-tcp\n",
			"      transport: nvme-tcp\n      fencing: required\n", `volumeAttributes.fencing "required" is not one the nvme-tcp transport takes (auto, off)`},
		{"takeover before three renewals", "daemonset.yaml", "            - --shutdown-grace=30s\n",
			"            - --shutdown-grace=30s\n            - --fencing-renew-interval=30s\n",
			"--fencing-takeover-after (1m0s) must be at least 3 x --fencing-renew-interval (30s)"},
		{"WWID cut short", "examples/iscsi-filesystem.yaml", `wwid: "36001405f3d2a1b0c4e5f60718293a4b5"`,
			`wwid: "36001405f3d2a1b0c4e5f60718293a4b"`, `volumeAttributes.wwid "36001405f3d2a1b0c4e5f60718293a4b" is not a WWID`},
		{"IQN in capitals", "examples/iscsi-filesystem.yaml", "iqn: iqn.2005-10.org.example:array1.db1",
			"iqn: iqn.2005-10.ORG.example:array1.db1", `has capitals: write it in lower case ("iqn.2005-10.org.example:array1.db1")`},
		{"NQN smuggling a fabrics option", "examples/nvme-tcp-filesystem.yaml", "subsysNQN: nqn.2005-10.org.example:array1.logs",
			"subsysNQN: nqn.2005-10.org.example:logs,hostnqn=x", "is not an NVMe qualified name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := checkEdited(t, c.file, c.old, c.new)
			if !strings.Contains(errs, c.want) {
				t.Fatalf("want an error containing %q, got:\n%s", c.want, errs)
			}
		})
	}
}

// Two attachers acting on every attachment at once is refused; with leader election two replicas are fine.
func TestControllerReplicasNeedLeaderElection(t *testing.T) {
	errs := checkEdited(t, "controller.yaml", "  replicas: 1\n", "  replicas: 2\n", "            - --leader-election\n", "")
	if want := "replicas 2 without the attacher's --leader-election"; !strings.Contains(errs, want) {
		t.Fatalf("want an error containing %q, got:\n%s", want, errs)
	}
	if errs := checkEdited(t, "controller.yaml", "  replicas: 1\n", "  replicas: 2\n"); errs != "" {
		t.Fatalf("two replicas with leader election: want no error, got:\n%s", errs)
	}
}

// renderValid renders the chart with values and fails the test for every rule the rendering breaks.
func renderValid(t *testing.T, values map[string]any) []*Object {
	t.Helper()
	objects, err := RenderChart(chartDir, values)
	if err != nil {
		t.Fatal(err)
	}
	Check(objects)
	for _, o := range objects {
		if len(o.Errors) > 0 {
			t.Errorf("%s: %s", o, strings.Join(o.Errors, "; "))
		}
	}
	return objects
}

// Node-only mode is one value: no Deployment, no RBAC, attachRequired false, and the rules still hold.
func TestChartNodeOnlyMode(t *testing.T) {
	for _, o := range renderValid(t, map[string]any{"controller": map[string]any{"enabled": false}}) {
		switch o.Kind {
		case "Deployment", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			t.Errorf("node-only mode renders %s", o)
		case "CSIDriver":
			if d := o.Value.(*storagev1.CSIDriver); d.Spec.AttachRequired == nil || *d.Spec.AttachRequired {
				t.Errorf("node-only mode renders attachRequired %v", d.Spec.AttachRequired)
			}
		}
	}
}

// seLinuxMount is on by default, and one value turns it off, written out, with the rules still holding.
func TestChartSeLinuxMount(t *testing.T) {
	for _, tc := range []struct {
		overrides map[string]any
		want      bool
	}{{nil, true}, {map[string]any{"seLinuxMount": false}, false}} {
		for _, o := range renderValid(t, tc.overrides) {
			if d, ok := o.Value.(*storagev1.CSIDriver); ok && (d.Spec.SELinuxMount == nil || *d.Spec.SELinuxMount != tc.want) {
				t.Errorf("values %v render seLinuxMount %v, want %v", tc.overrides, d.Spec.SELinuxMount, tc.want)
			}
		}
	}
}

// values.schema.json turns a misspelled value into an error instead of a silently ignored key.
func TestChartRejectsUnknownValue(t *testing.T) {
	_, err := RenderChart(chartDir, map[string]any{"kubeletRooot": "/var/lib/k0s/kubelet"})
	if err == nil || !strings.Contains(err.Error(), "kubeletRooot") {
		t.Fatalf("want a schema error naming kubeletRooot, got %v", err)
	}
}

// Other values render a deployment that is still consistent (paths follow the driver name and root).
func TestChartFollowsValues(t *testing.T) {
	objects := renderValid(t, map[string]any{
		"driverName":  "iscsi.csi.example.org",
		"kubeletRoot": "/var/lib/k0s/kubelet",
		"healthPort":  9818,
		"metrics":     map[string]any{"enabled": true, "host": "::", "port": 9820},
		"image":       map[string]any{"repository": "example.org/blocknode", "tag": "1.2.3", "pullPolicy": "Always"},
	})
	for _, o := range objects {
		if ds, ok := o.Value.(*appsv1.DaemonSet); ok {
			args := strings.Join(ds.Spec.Template.Spec.Containers[1].Args, " ")
			if !strings.Contains(args, "--kubelet-registration-path=/var/lib/k0s/kubelet/plugins/iscsi.csi.example.org/csi.sock") {
				t.Errorf("registrar args: %s", args)
			}
			plugin := strings.Join(ds.Spec.Template.Spec.Containers[0].Args, " ")
			if !strings.Contains(plugin, "--metrics-address=[::]:9820") {
				t.Errorf("plugin args: %s", plugin)
			}
		}
	}
}

// The fencing values reach the plugin's flags only when they differ from its defaults (so the default render
// stays the plain manifests), and a takeover time under three renewals is refused.
func TestChartFencingValues(t *testing.T) {
	objects := renderValid(t, map[string]any{"fencing": map[string]any{"renewInterval": "5s", "takeoverAfter": "20s"}})
	for _, o := range objects {
		if ds, ok := o.Value.(*appsv1.DaemonSet); ok {
			plugin := strings.Join(ds.Spec.Template.Spec.Containers[0].Args, " ")
			if !strings.Contains(plugin, "--fencing-renew-interval=5s") || !strings.Contains(plugin, "--fencing-takeover-after=20s") {
				t.Errorf("plugin args: %s", plugin)
			}
		}
	}
	objects, err := RenderChart(chartDir, map[string]any{"fencing": map[string]any{"renewInterval": "30s", "takeoverAfter": "60s"}})
	if err != nil {
		t.Fatal(err)
	}
	Check(objects)
	var errs []string
	for _, o := range objects {
		errs = append(errs, o.Errors...)
	}
	if !strings.Contains(strings.Join(errs, "\n"), "must be at least 3 x --fencing-renew-interval") {
		t.Errorf("want the takeover rule refused, got %v", errs)
	}
	if _, err := RenderChart(chartDir, map[string]any{"fencing": map[string]any{"renewInterval": "500ms", "takeoverAfter": "60s"}}); err == nil {
		t.Errorf("500ms: the plugin takes no milliseconds, the schema must refuse it")
	}
}

// The attacher's client rate reaches its flags (a fraction too), and a rate of 0 or a burst of 0, which would
// stop its requests or fail its start, is refused by the schema.
func TestChartAttacherRateValues(t *testing.T) {
	rate := func(qps, burst any) map[string]any {
		return map[string]any{"sidecars": map[string]any{"attacher": map[string]any{"kubeApiQps": qps, "kubeApiBurst": burst}}}
	}
	found := false
	for _, o := range renderValid(t, rate(7.5, 40)) {
		if d, ok := o.Value.(*appsv1.Deployment); ok {
			attacher := findByImage(d.Spec.Template.Spec.Containers, attacherImage)
			args := strings.Join(attacher.Args, " ")
			if !strings.Contains(args, "--kube-api-qps=7.5") || !strings.Contains(args, "--kube-api-burst=40") {
				t.Errorf("attacher args: %s", args)
			}
			found = true
		}
	}
	if !found {
		t.Fatal("no controller Deployment rendered")
	}
	for _, bad := range []map[string]any{rate(0, 30), rate(20, 0), rate(20, 2.5)} {
		if _, err := RenderChart(chartDir, bad); err == nil {
			t.Errorf("%v: want a schema error", bad)
		}
	}
}

// A chart whose defaults drift from the plain manifests is caught.
func TestChartDriftIsCaught(t *testing.T) {
	manifests, err := DecodeDir(filepath.Join(deployDir, "kubernetes"))
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := RenderChart(chartDir, map[string]any{"logFormat": "text"})
	if err != nil {
		t.Fatal(err)
	}
	CompareWithManifests(rendered, manifests, filepath.Join(deployDir, "kubernetes"))
	for _, o := range rendered {
		if o.Kind == "DaemonSet" && strings.Contains(strings.Join(o.Errors, "\n"), `"--log-format=json", chart "--log-format=text"`) {
			return
		}
	}
	t.Fatalf("the --log-format difference was not reported")
}

// The Containerfile is built by deploy/image/build.sh (make image), which needs root and minutes; what can be
// checked without building it is checked here: every ADD and COPY source is let into the build context by
// the ignore file, is either a file of deploy/ (build.sh copies those into the context under the same name)
// or one of the three things build.sh makes, and the entrypoint uses the flags file and AOT cache the
// training run makes.
func TestContainerfileIsConsistent(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(deployDir, "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ignore, err := os.ReadFile(filepath.Join(deployDir, "Containerfile.dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(deployDir, "image", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	made := map[string]bool{"base.tar": true, "jre": true, "blocknode.jar": true}
	text := string(data)
	copied := 0
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 || (fields[0] != "COPY" && fields[0] != "ADD") || strings.HasPrefix(fields[1], "--") {
			continue
		}
		for _, src := range fields[1 : len(fields)-1] {
			copied++
			if !strings.Contains(string(ignore), "\n!"+src+"\n") {
				t.Errorf("Containerfile.dockerignore keeps %s out of the build context", src)
			}
			if made[src] {
				if !strings.Contains(string(script), `"$context/`+src+`"`) {
					t.Errorf("Containerfile %ss %s, which deploy/image/build.sh does not put into the context", fields[0], src)
				}
			} else if _, err := os.Stat(filepath.Join(deployDir, src)); err != nil {
				t.Errorf("Containerfile %ss %s, neither made by build.sh nor a file of deploy/: %v", fields[0], src, err)
			}
		}
	}
	if copied < 5 {
		t.Errorf("found %d ADD and COPY sources, want the base, the runtime, the jar, jvm.args and aot-training.sh", copied)
	}
	for _, want := range []string{
		"RUN bash /app/aot-training.sh /app/blocknode.jar /app/blocknode.aot /app/jvm.args",
		`ENTRYPOINT ["java", "@/app/jvm.args", "-XX:AOTCache=/app/blocknode.aot", "-jar", "/app/blocknode.jar"]`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("Containerfile lacks %s", want)
		}
	}
	args, err := os.ReadFile(filepath.Join(deployDir, "jvm.args"))
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "--enable-native-access=ALL-UNNAMED"} {
		if !strings.Contains(string(args), flag+"\n") {
			t.Errorf("jvm.args lacks %s", flag)
		}
	}
}

// -set and -set-string parse as helm's --set and --set-string, and the rendering follows them.
func TestRenderWithValues(t *testing.T) {
	values := Values{}
	set := values.Flag(strvals.ParseInto)
	setString := values.Flag(strvals.ParseIntoString)
	for _, v := range []string{"image.repository=localhost/blocknode/blocknode", "kubeletRoot=/var/lib/k0s/kubelet"} {
		if err := set.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := setString.Set("image.tag=1"); err != nil {
		t.Fatal(err)
	}
	rendered, err := RenderChartChecked(chartDir, values)
	if err != nil {
		t.Fatal(err)
	}
	ds := rendered["blocknode/templates/daemonset.yaml"]
	for _, want := range []string{"image: localhost/blocknode/blocknode:1\n", "--kubelet-root=/var/lib/k0s/kubelet\n"} {
		if !strings.Contains(ds, want) {
			t.Errorf("rendering lacks %q", want)
		}
	}
	// A number where the schema wants a string, and a misspelled key, are errors.
	for _, bad := range []string{"image.tag=1", "image.tagg=x"} {
		values := Values{}
		if err := values.Flag(strvals.ParseInto).Set(bad); err != nil {
			t.Fatal(err)
		}
		if _, err := RenderChartChecked(chartDir, values); err == nil {
			t.Errorf("-set %s: want an error", bad)
		}
	}
	// A rendering that breaks blocknode's rules is refused with the rule's message.
	values = Values{}
	if err := values.Flag(strvals.ParseInto).Set("image.tag=latest"); err != nil {
		t.Fatal(err)
	}
	if _, err := RenderChartChecked(chartDir, values); err == nil || !strings.Contains(err.Error(), "not pinned") {
		t.Errorf("-set image.tag=latest: want the pinning rule's error, got %v", err)
	}
}
