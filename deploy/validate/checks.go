package main

import (
	"net"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The plugin's own defaults (docs/reference/flags.md, generated from the plugin's FlagParser), used when a flag is not given.
const (
	defaultDriverName    = "block.csi.blocknode.dev"
	defaultEndpoint      = "unix:///csi/csi.sock"
	defaultKubeletRoot   = "/var/lib/kubelet"
	defaultStateDir      = "/var/lib/blocknode"
	defaultShutdownGrace = 30 * time.Second
	defaultHealthPort    = 9808
	pluginContainer      = "blocknode"
	// livenessprobe's default --probe-timeout (v2.19.0).
	defaultProbeTimeout = 3 * time.Second
	// node-driver-registrar's default --timeout (v2.17.0): how long it waits for GetPluginInfo before it exits.
	defaultRegistrarTimeout = time.Second
	// The least --timeout a deployment may give the registrar: a JVM's first call took 535 ms on a 2-core node
	// with every core busy twice over, and over 1 s beside VMs (a registrar that gives up exits, and kubelet
	// restarts it with back-off while the node cannot register).
	minRegistrarTimeout = 10 * time.Second
)

// Check runs blocknode's own rules over one set of objects (the manifests, or one rendering of the chart),
// attaching every problem to the object it concerns.
func Check(objects []*Object) {
	checkSet(objects, setOptions{})
}

// setOptions are how a set that is not a whole deployment differs (-pv: a user's PV files).
type setOptions struct {
	driverName       string // the driver the PVs must name, when the set deploys none
	secretsElsewhere bool   // a nodeStageSecretRef may name a Secret outside the set
}

func checkSet(objects []*Object, options setOptions) {
	s := newObjectSet(objects)
	s.options = options
	for _, o := range objects {
		if o.Value == nil {
			continue // did not decode; already failed
		}
		switch v := o.Value.(type) {
		case *appsv1.DaemonSet:
			checkPodSpec(o, &v.Spec.Template.Spec)
			checkPlugin(o, v, s)
		case *appsv1.Deployment:
			checkPodSpec(o, &v.Spec.Template.Spec)
			if isController(v) {
				checkController(o, v, s)
			} else {
				o.fail("a Deployment of blocknode must run the controller side (container %q with --mode=controller)", pluginContainer)
			}
		case *rbacv1.ClusterRole:
			checkRules(o, v.Rules)
		case *rbacv1.Role:
			checkRules(o, v.Rules)
		case *rbacv1.ClusterRoleBinding:
			checkBinding(o, v.Subjects, s)
		case *rbacv1.RoleBinding:
			checkBinding(o, v.Subjects, s)
		case *corev1.Pod:
			checkPodSpec(o, &v.Spec)
			checkPodClaims(o, v, s)
		case *storagev1.CSIDriver:
			checkCSIDriver(o, v, s)
		case *corev1.PersistentVolume:
			checkPV(o, v, s)
		case *corev1.PersistentVolumeClaim:
			checkPVC(o, v, s)
		case *corev1.Secret:
			checkSecret(o, v, s)
		case *corev1.ConfigMap:
			checkDashboardConfigMap(o, v)
		case *PrometheusRule:
			checkPrometheusRule(o, v)
		case *PodMonitor:
			checkPodMonitor(o, v, s)
		}
	}
}

// objectSet indexes a set by kind, namespace and name, and knows the driver name it deploys.
type objectSet struct {
	byKey               map[string]*Object
	csiDrivers          []*storagev1.CSIDriver
	plugins             []pluginInfo
	daemonSets          []*appsv1.DaemonSet // the PodMonitor's selector and port are checked against them
	controllers         int                 // Deployments running the controller side
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	roleBindings        []*rbacv1.RoleBinding
	handles             map[string]string // volumeHandle -> PV name
	options             setOptions
}

type pluginInfo struct {
	driver string
}

func key(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

func newObjectSet(objects []*Object) *objectSet {
	s := &objectSet{byKey: map[string]*Object{}, handles: map[string]string{}}
	for _, o := range objects {
		if o.Value == nil {
			continue
		}
		k := key(o.Kind, o.Namespace, o.Name)
		if prev, dup := s.byKey[k]; dup {
			o.fail("the same object is also defined in %s", prev.Source)
			continue
		}
		s.byKey[k] = o
		switch v := o.Value.(type) {
		case *storagev1.CSIDriver:
			s.csiDrivers = append(s.csiDrivers, v)
		case *appsv1.DaemonSet:
			s.daemonSets = append(s.daemonSets, v)
			if c := findContainer(v.Spec.Template.Spec.Containers, pluginContainer); c != nil {
				s.plugins = append(s.plugins, pluginInfo{driver: flagsOf(c.Args).get("driver-name", defaultDriverName)})
			}
		case *appsv1.Deployment:
			if isController(v) {
				s.controllers++
			}
		case *rbacv1.ClusterRoleBinding:
			s.clusterRoleBindings = append(s.clusterRoleBindings, v)
		case *rbacv1.RoleBinding:
			s.roleBindings = append(s.roleBindings, v)
		}
	}
	return s
}

// driverName is the one driver name the set deploys: the CSIDriver's, else the plugin's, else the default.
func (s *objectSet) driverName() string {
	if len(s.csiDrivers) > 0 {
		return s.csiDrivers[0].Name
	}
	if len(s.plugins) > 0 {
		return s.plugins[0].driver
	}
	if s.options.driverName != "" {
		return s.options.driverName
	}
	return defaultDriverName
}

func (s *objectSet) get(kind, namespace, name string) *Object {
	return s.byKey[key(kind, namespace, name)]
}

// ---- flags ---------------------------------------------------------------------------------------------

type flags map[string]string

// flagsOf reads "--name=value" and "--name value" arguments.
func flagsOf(args []string) flags {
	f := flags{}
	for i := 0; i < len(args); i++ {
		arg := strings.TrimLeft(args[i], "-")
		if arg == args[i] {
			continue
		}
		if name, value, ok := strings.Cut(arg, "="); ok {
			f[name] = value
		} else if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			f[arg] = args[i+1]
			i++
		} else {
			f[arg] = "true"
		}
	}
	return f
}

// duration is flag NAME of container c as a positive duration, or fallback when it is not given; false, with the
// problem attached to o, when it is given as anything else.
func (f flags) duration(o *Object, c *corev1.Container, name string, fallback time.Duration) (time.Duration, bool) {
	v, ok := f[name]
	if !ok {
		return fallback, true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		o.fail("%s: --%s %q is not a positive duration", c.Name, name, v)
		return 0, false
	}
	return d, true
}

func (f flags) get(name, fallback string) string {
	if v, ok := f[name]; ok {
		return v
	}
	return fallback
}

// ---- pod specs (DaemonSet and Pod) ---------------------------------------------------------------------

var digestOrTag = regexp.MustCompile(`^[^@]+(@sha256:[0-9a-f]{64}|:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})$`)

func checkPodSpec(o *Object, spec *corev1.PodSpec) {
	volumes := map[string]*corev1.Volume{}
	for i := range spec.Volumes {
		volumes[spec.Volumes[i].Name] = &spec.Volumes[i]
	}
	all := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	if len(spec.Containers) == 0 {
		o.fail("the pod has no containers")
	}
	for _, c := range all {
		where := "container " + c.Name
		req := c.Resources.Requests
		if _, ok := req[corev1.ResourceCPU]; !ok {
			o.fail("%s has no cpu request", where)
		}
		if _, ok := req[corev1.ResourceMemory]; !ok {
			o.fail("%s has no memory request", where)
		}
		if lim, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			if r, ok := req[corev1.ResourceMemory]; ok && lim.Cmp(r) < 0 {
				o.fail("%s: memory limit %s is below its request %s", where, lim.String(), r.String())
			}
		}
		// The part after the last "/" holds the tag; a registry port ("host:5000/x") is not a tag.
		image := c.Image
		last := image[strings.LastIndex(image, "/")+1:]
		if !digestOrTag.MatchString(last) || strings.HasSuffix(image, ":latest") {
			o.fail("%s: image %q is not pinned to a tag or digest (and not :latest)", where, image)
		}
		for _, m := range c.VolumeMounts {
			if volumes[m.Name] == nil {
				o.fail("%s mounts volume %q, which the pod does not define", where, m.Name)
			}
		}
		for _, d := range c.VolumeDevices {
			if volumes[d.Name] == nil {
				o.fail("%s uses device volume %q, which the pod does not define", where, d.Name)
			}
		}
		for kind, probe := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe,
			"startup": c.StartupProbe} {
			if probe == nil {
				continue
			}
			var port *intstr.IntOrString
			if probe.HTTPGet != nil {
				port = &probe.HTTPGet.Port
			} else if probe.TCPSocket != nil {
				port = &probe.TCPSocket.Port
			}
			if port != nil && port.Type == intstr.String && containerPort(&c, port.StrVal) == 0 {
				o.fail("%s: %s probe names port %q, which the container does not declare", where, kind, port.StrVal)
			}
		}
	}
}

func findContainer(containers []corev1.Container, name string) *corev1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}

// findByImage finds the container whose image repository ends in name (the sidecars are found by image).
func findByImage(containers []corev1.Container, name string) *corev1.Container {
	for i := range containers {
		repo := containers[i].Image
		if at := strings.Index(repo, "@"); at >= 0 {
			repo = repo[:at]
		}
		if colon := strings.LastIndex(repo, ":"); colon > strings.LastIndex(repo, "/") {
			repo = repo[:colon]
		}
		if path.Base(repo) == name {
			return &containers[i]
		}
	}
	return nil
}

func containerPort(c *corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func volumeByName(spec *corev1.PodSpec, name string) *corev1.Volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}

// hostPathAt is the host path mounted at mountPath in c (by an exact mount), or "" if none is.
func hostPathAt(spec *corev1.PodSpec, c *corev1.Container, mountPath string) (string, *corev1.VolumeMount) {
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		if path.Clean(m.MountPath) != path.Clean(mountPath) {
			continue
		}
		if v := volumeByName(spec, m.Name); v != nil && v.HostPath != nil {
			return path.Clean(v.HostPath.Path), m
		}
		return "", m
	}
	return "", nil
}

func socketPath(endpoint string) string {
	p := strings.TrimPrefix(strings.TrimPrefix(endpoint, "unix://"), "unix:")
	return path.Clean(p)
}

// ---- the plugin's DaemonSet ----------------------------------------------------------------------------

func checkPlugin(o *Object, ds *appsv1.DaemonSet, s *objectSet) {
	spec := &ds.Spec.Template.Spec
	plugin := findContainer(spec.Containers, pluginContainer)
	if plugin == nil {
		o.fail("no container named %q (the plugin)", pluginContainer)
		return
	}
	f := flagsOf(plugin.Args)
	driver := f.get("driver-name", defaultDriverName)
	root := path.Clean(f.get("kubelet-root", defaultKubeletRoot))
	socket := socketPath(f.get("endpoint", defaultEndpoint))
	pluginDir := path.Join(root, "plugins", driver)

	if plugin.SecurityContext == nil || plugin.SecurityContext.Privileged == nil || !*plugin.SecurityContext.Privileged {
		o.fail("the plugin container must be privileged (mounts, device nodes, Bidirectional propagation)")
	}
	hostRoot, rootMount := hostPathAt(spec, plugin, root)
	switch {
	case rootMount == nil:
		o.fail("the plugin does not mount the kubelet root %s (--kubelet-root) at the same path", root)
	case hostRoot != root:
		o.fail("the plugin's %s must be the host's %s (a hostPath), not %q", root, root, hostRoot)
	case rootMount.MountPropagation == nil || *rootMount.MountPropagation != corev1.MountPropagationBidirectional:
		o.fail("the plugin's kubelet-root mount %s must have mountPropagation Bidirectional", root)
	}
	hostSocketDir, socketMount := hostPathAt(spec, plugin, path.Dir(socket))
	if socketMount == nil || hostSocketDir != pluginDir {
		o.fail("the plugin's socket directory %s must be the host's %s (got %q)", path.Dir(socket), pluginDir, hostSocketDir)
	}
	stateDir := path.Clean(f.get("state-dir", defaultStateDir))
	if hostState, m := hostPathAt(spec, plugin, stateDir); m == nil || hostState == "" {
		o.fail("the state directory %s (--state-dir) must be a hostPath mount, or records are lost on restart", stateDir)
	}
	if nodeID := f["node-id"]; !strings.HasPrefix(nodeID, "$(") || !strings.HasSuffix(nodeID, ")") {
		o.fail("--node-id must come from the downward API ($(NODE_NAME)), got %q", nodeID)
	} else if !envFromNodeName(plugin, nodeID[2:len(nodeID)-1]) {
		o.fail("--node-id=%s: env %s must come from fieldRef spec.nodeName", nodeID, nodeID[2:len(nodeID)-1])
	}
	if !spec.HostNetwork {
		o.fail("hostNetwork must be true: iscsiadm and multipath reach iscsid and multipathd through abstract sockets of the host's network namespace")
	}
	if !spec.HostIPC {
		o.fail("hostIPC must be true: libdevmapper's udev cookies (multipath -f) are System V semaphores of the host")
	}
	if spec.PriorityClassName != "system-node-critical" {
		o.fail("priorityClassName must be system-node-critical, got %q", spec.PriorityClassName)
	}
	if !toleratesEverything(spec.Tolerations) {
		o.fail("the plugin must tolerate every taint (operator Exists, no key) to run on every node")
	}
	checkGrace(o, f, spec)
	checkFencingFlags(o, f)
	if lf := f.get("log-format", "json"); lf != "json" {
		o.fail("--log-format must be json in a deployment, got %q", lf)
	}
	if addr, ok := f["metrics-address"]; ok && addr != "" {
		_, port, err := net.SplitHostPort(addr)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || !declaresPort(plugin, int32(n)) {
			o.fail("--metrics-address=%s: its port must be declared in the plugin container's ports", addr)
		}
	}
	if sa := spec.ServiceAccountName; sa == "" {
		o.fail("serviceAccountName is not set (the namespace's default account would be used)")
	} else if s.get("ServiceAccount", o.Namespace, sa) == nil {
		o.fail("serviceAccountName %q: no such ServiceAccount in namespace %q in this set", sa, o.Namespace)
	}
	if len(s.csiDrivers) != 1 {
		o.fail("the set must hold exactly one CSIDriver, it holds %d", len(s.csiDrivers))
	}
	checkRegistrar(o, spec, socket, pluginDir, root)
	checkLivenessProbe(o, spec, plugin, socket, pluginDir)
}

// checkGrace: on SIGTERM the plugin lets running calls finish for --shutdown-grace; kubelet must not SIGKILL
// it before that.
func checkGrace(o *Object, f flags, spec *corev1.PodSpec) {
	grace := defaultShutdownGrace
	if g, ok := f["shutdown-grace"]; ok {
		d, err := time.ParseDuration(g)
		if err != nil {
			o.fail("--shutdown-grace=%q is not a duration", g)
		}
		grace = d
	}
	if spec.TerminationGracePeriodSeconds == nil || time.Duration(*spec.TerminationGracePeriodSeconds)*time.Second <= grace {
		o.fail("terminationGracePeriodSeconds must be longer than --shutdown-grace (%s)", grace)
	}
}

// checkFencingFlags: the plugin refuses to start when another node's key may be taken over before it has had
// three renewal rounds to change (--fencing-takeover-after < 3 x --fencing-renew-interval).
func checkFencingFlags(o *Object, f flags) {
	renew, err := time.ParseDuration(f.get("fencing-renew-interval", "10s"))
	if err != nil || renew <= 0 {
		o.fail("--fencing-renew-interval=%q is not a positive duration", f["fencing-renew-interval"])
		return
	}
	takeover, err := time.ParseDuration(f.get("fencing-takeover-after", "60s"))
	if err != nil || takeover <= 0 {
		o.fail("--fencing-takeover-after=%q is not a positive duration", f["fencing-takeover-after"])
		return
	}
	if takeover < 3*renew {
		o.fail("--fencing-takeover-after (%s) must be at least 3 x --fencing-renew-interval (%s): the plugin refuses to start otherwise",
			takeover, renew)
	}
}

func envFromNodeName(c *corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
		}
	}
	return false
}

func toleratesEverything(ts []corev1.Toleration) bool {
	for _, t := range ts {
		if t.Key == "" && t.Operator == corev1.TolerationOpExists && t.Effect == "" {
			return true
		}
	}
	return false
}

func declaresPort(c *corev1.Container, port int32) bool {
	for _, p := range c.Ports {
		if p.ContainerPort == port {
			return true
		}
	}
	return false
}

// sidecarSocket checks that a sidecar's --csi-address is the plugin's socket, through the same host directory.
func sidecarSocket(o *Object, spec *corev1.PodSpec, c *corev1.Container, pluginSocket, pluginDir string) {
	addr := socketPath(flagsOf(c.Args).get("csi-address", "/run/csi/socket"))
	hostDir, m := hostPathAt(spec, c, path.Dir(addr))
	if m == nil || hostDir != pluginDir || path.Base(addr) != path.Base(pluginSocket) {
		o.fail("%s: --csi-address %s is not the plugin's socket %s/%s", c.Name, addr, pluginDir, path.Base(pluginSocket))
	}
}

func checkRegistrar(o *Object, spec *corev1.PodSpec, socket, pluginDir, root string) {
	c := findByImage(spec.Containers, "csi-node-driver-registrar")
	if c == nil {
		o.fail("no node-driver-registrar container (image .../csi-node-driver-registrar)")
		return
	}
	sidecarSocket(o, spec, c, socket, pluginDir)
	f := flagsOf(c.Args)
	want := path.Join(pluginDir, path.Base(socket))
	if got := f["kubelet-registration-path"]; got != want {
		o.fail("%s: --kubelet-registration-path must be %s (the plugin's socket on the host for driver %s), got %q",
			c.Name, want, path.Base(pluginDir), got)
	}
	regDir := f.get("plugin-registration-path", "/registration")
	if host, m := hostPathAt(spec, c, regDir); m == nil || host != path.Join(root, "plugins_registry") {
		o.fail("%s: %s must be the host's %s (kubelet's plugin registry), got %q", c.Name, regDir,
			path.Join(root, "plugins_registry"), host)
	}
	if timeout, ok := f.duration(o, c, "timeout", defaultRegistrarTimeout); ok && timeout < minRegistrarTimeout {
		o.fail("%s: --timeout (%s) must be at least %s: the plugin's first GetPluginInfo can take longer than "+
			"upstream's 1s default on a busy node, and a registrar that gives up exits", c.Name, timeout, minRegistrarTimeout)
	}
	if p := c.LivenessProbe; p != nil && p.Exec != nil {
		if got := flagsOf(p.Exec.Command)["kubelet-registration-path"]; got != want {
			o.fail("%s: the registration probe's --kubelet-registration-path must be %s, got %q", c.Name, want, got)
		}
	}
}

func checkLivenessProbe(o *Object, spec *corev1.PodSpec, plugin *corev1.Container, socket, pluginDir string) {
	c := findByImage(spec.Containers, "livenessprobe")
	if c == nil {
		o.fail("no livenessprobe container (image .../livenessprobe)")
		return
	}
	sidecarSocket(o, spec, c, socket, pluginDir)
	f := flagsOf(c.Args)
	host, port := "", defaultHealthPort
	if ep, ok := f["http-endpoint"]; ok {
		h, p, err := net.SplitHostPort(ep)
		n, perr := strconv.Atoi(p)
		if err != nil || perr != nil {
			o.fail("%s: --http-endpoint %q is not host:port", c.Name, ep)
			return
		}
		host, port = h, n
	} else if hp, ok := f["health-port"]; ok {
		n, err := strconv.Atoi(hp)
		if err != nil {
			o.fail("%s: --health-port %q is not a number", c.Name, hp)
			return
		}
		port = n
	}
	probe := plugin.LivenessProbe
	if probe == nil || probe.HTTPGet == nil {
		o.fail("the plugin container needs an httpGet livenessProbe on the livenessprobe sidecar's /healthz")
		return
	}
	got := probe.HTTPGet.Port.IntVal
	if probe.HTTPGet.Port.Type == intstr.String {
		got = containerPort(plugin, probe.HTTPGet.Port.StrVal)
	}
	if int(got) != port || probe.HTTPGet.Path != "/healthz" {
		o.fail("the plugin's livenessProbe must GET /healthz on port %d (livenessprobe's), got %s on %d",
			port, probe.HTTPGet.Path, got)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		if probeIP := net.ParseIP(probe.HTTPGet.Host); probeIP == nil || !probeIP.IsLoopback() {
			o.fail("livenessprobe listens on %s only: the plugin's livenessProbe must set host to it", host)
		}
	}
	// kubelet must wait longer than livenessprobe waits for Probe: with the plugin gone, livenessprobe answers
	// 500 only once --probe-timeout has run out (test-e2e/liveness measured it), and kubelet should get that
	// answer, which says why, rather than give up on its own.
	probeTimeout, ok := f.duration(o, c, "probe-timeout", defaultProbeTimeout)
	if !ok {
		return
	}
	timeout := time.Duration(max(probe.TimeoutSeconds, 1)) * time.Second // 0: kubelet's default, 1 s
	if timeout <= probeTimeout {
		o.fail("the plugin's livenessProbe timeoutSeconds (%s) must be longer than %s's --probe-timeout (%s)",
			timeout, c.Name, probeTimeout)
	}
}

// ---- CSIDriver -----------------------------------------------------------------------------------------

func checkCSIDriver(o *Object, d *storagev1.CSIDriver, s *objectSet) {
	for _, p := range s.plugins {
		if p.driver != d.Name {
			o.fail("CSIDriver %q does not match the plugin's --driver-name %q", d.Name, p.driver)
		}
	}
	// The API's default for an absent attachRequired is true.
	attachRequired := d.Spec.AttachRequired == nil || *d.Spec.AttachRequired
	switch {
	case attachRequired && s.controllers == 0:
		o.fail("attachRequired is true but the set deploys no controller side (blocknode --mode=controller " +
			"beside the external-attacher): no one would mark a VolumeAttachment attached, pods would wait forever")
	case !attachRequired && s.controllers > 0:
		o.fail("attachRequired is false but the set deploys the controller side: the attacher would never be " +
			"asked and ReadWriteOnce would not be guarded across nodes; set it true, or drop the controller (node-only mode)")
	}
	if d.Spec.PodInfoOnMount == nil || *d.Spec.PodInfoOnMount {
		o.fail("podInfoOnMount must be false")
	}
	if len(d.Spec.VolumeLifecycleModes) != 1 || d.Spec.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent {
		o.fail("volumeLifecycleModes must be [Persistent], got %v", d.Spec.VolumeLifecycleModes)
	}
	if d.Spec.FSGroupPolicy == nil || *d.Spec.FSGroupPolicy != storagev1.FileFSGroupPolicy {
		o.fail("fsGroupPolicy must be File")
	}
	// Left out, the API's default is false, and on SELinux nodes every pod start relabels its volumes file by
	// file: an opt-out must be written out, not lost with a line.
	if d.Spec.SELinuxMount == nil {
		o.fail("seLinuxMount must be set: true (the default) mounts volumes with the pod's SELinux context, " +
			"false (written out) makes kubelet relabel every file at each pod start")
	}
}

// ---- PersistentVolumes and their volume attributes -----------------------------------------------------

// transportKeys are the volume_context keys each transport reads (docs/reference/volume-context.md; docs/design/architecture.md).
var transportKeys = map[string]map[string]bool{
	"iscsi": {"transport": true, "targetPortal": true, "portals": true, "iqn": true, "lun": true, "wwid": true, "iface": true,
		"replacementTimeout": true, "fencing": true, "mkfsOptions": true, "fsck": true, "encryption": true},
	"fc": {"transport": true, "targetWWNs": true, "lun": true, "wwids": true, "wwid": true, "fencing": true,
		"mkfsOptions": true, "fsck": true, "encryption": true},
	"local": {"transport": true, "devicePath": true, "wwid": true, "fencing": true, "mkfsOptions": true, "fsck": true, "encryption": true},
	"nvme-tcp": {"transport": true, "subsysNQN": true, "nvmePortals": true, "namespaceNGUID": true,
		"namespaceEUI64": true, "namespaceUUID": true, "namespaceID": true, "hostNQN": true, "hostID": true, "fencing": true,
		"mkfsOptions": true, "fsck": true, "encryption": true},
}

// fencingModes are volume_context "fencing"'s values per transport (docs/design/fencing.md): the SAN
// transports fence with SCSI-3 persistent reservations; NVMe/TCP is not fenced, so "required" is refused there.
var fencingModes = map[string]map[string]bool{
	"iscsi":    {"auto": true, "required": true, "off": true},
	"fc":       {"auto": true, "required": true, "off": true},
	"nvme-tcp": {"auto": true, "off": true},
	"local":    {"auto": true, "off": true},
}

// stageSecretKeys are the node-stage Secret keys the plugin reads: CHAP (iSCSI), DH-HMAC-CHAP (NVMe/TCP, under
// the kernel's option names) and the LUKS2 passphrase of a volume with encryption: luks2.
var stageSecretKeys = map[string]bool{
	"node.session.auth.username": true, "node.session.auth.password": true,
	"node.session.auth.username_in": true, "node.session.auth.password_in": true,
	"dhchap_secret": true, "dhchap_ctrl_secret": true,
	"encryptionPassphrase": true,
}

func inferTransport(attrs map[string]string) string {
	if t := attrs["transport"]; t != "" {
		return t
	}
	switch {
	case attrs["iqn"] != "" || attrs["targetPortal"] != "":
		return "iscsi"
	case attrs["targetWWNs"] != "" || attrs["wwids"] != "":
		return "fc"
	case attrs["devicePath"] != "":
		return "local"
	case attrs["subsysNQN"] != "" || attrs["nvmePortals"] != "":
		return "nvme-tcp"
	}
	return ""
}

// list reads a value that lists several items (portals) as the plugin's ContextList does: "a,b", "[a, b]" or
// `["a","b"]`; the outer brackets are a list's only when they enclose everything, so "[fd00::1]:3260" is one
// IPv6 portal, not a broken list.
func list(value string) []string {
	body := strings.TrimSpace(value)
	if strings.HasPrefix(body, "[") && strings.HasSuffix(body, "]") && (strings.HasPrefix(body, "[[") ||
		strings.HasPrefix(body, `["`) || strings.Index(body, "]") == len(body)-1) {
		body = body[1 : len(body)-1]
	}
	var items []string
	for _, item := range strings.Split(body, ",") {
		v := strings.TrimSpace(item)
		if len(v) >= 2 && strings.HasPrefix(v, `"`) && strings.HasSuffix(v, `"`) {
			v = strings.TrimSpace(v[1 : len(v)-1])
		}
		if v != "" {
			items = append(items, v)
		}
	}
	return items
}

// entries reads a plain comma-separated value (WWIDs, WWPNs) as the fc transport does: no list brackets, and an
// empty entry is one, which its format refuses.
func entries(value string) []string {
	if strings.TrimSpace(value) == "" {
		return nil
	}
	var items []string
	for _, item := range strings.Split(value, ",") {
		items = append(items, strings.TrimSpace(item))
	}
	return items
}

func checkPV(o *Object, pv *corev1.PersistentVolume, s *objectSet) {
	csi := pv.Spec.CSI
	if csi == nil {
		o.fail("spec.csi is missing: not a blocknode volume")
		return
	}
	if want := s.driverName(); csi.Driver != want {
		o.fail("spec.csi.driver %q is not the deployed driver %q", csi.Driver, want)
	}
	if csi.VolumeHandle == "" {
		o.fail("spec.csi.volumeHandle is empty")
	} else if other, dup := s.handles[csi.VolumeHandle]; dup {
		o.fail("volumeHandle %q is also PV %s's: handles must be unique (kubelet's staging path and the plugin's record derive from it)",
			csi.VolumeHandle, other)
	} else {
		s.handles[csi.VolumeHandle] = pv.Name
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
		o.fail("persistentVolumeReclaimPolicy Delete: no controller can delete a static LUN; use Retain")
	}
	if _, ok := pv.Spec.Capacity[corev1.ResourceStorage]; !ok {
		o.fail("spec.capacity.storage is missing")
	}
	if csi.FSType != "" && csi.FSType != "ext4" && csi.FSType != "xfs" {
		o.fail("fsType %q: the plugin formats only ext4 or xfs", csi.FSType)
	}
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock && csi.FSType != "" {
		o.fail("a Block volume has no fsType")
	}
	checkAttributes(o, csi.VolumeAttributes)
	if encrypted(csi.VolumeAttributes) && csi.NodeStageSecretRef == nil {
		o.fail("volumeAttributes.encryption is luks2, but the PV has no nodeStageSecretRef: every stage is " +
			"refused until a Secret with encryptionPassphrase is named (a PV cannot be edited: delete and recreate it)")
	}
	if ref := csi.NodeStageSecretRef; ref != nil {
		if ref.Name == "" || ref.Namespace == "" {
			o.fail("nodeStageSecretRef needs both name and namespace")
		} else if s.get("Secret", ref.Namespace, ref.Name) == nil && !s.options.secretsElsewhere {
			o.fail("nodeStageSecretRef %s/%s: no such Secret in this set", ref.Namespace, ref.Name)
		}
	}
	if ref := pv.Spec.ClaimRef; ref != nil {
		pvcObj := s.get("PersistentVolumeClaim", ref.Namespace, ref.Name)
		if pvcObj == nil {
			o.fail("claimRef %s/%s: no such PersistentVolumeClaim in this set", ref.Namespace, ref.Name)
		} else if pvc := pvcObj.Value.(*corev1.PersistentVolumeClaim); pvc.Spec.VolumeName != pv.Name {
			o.fail("claimRef %s/%s: that claim's volumeName is %q", ref.Namespace, ref.Name, pvc.Spec.VolumeName)
		}
	}
}

// encrypted says whether the volume asks for LUKS2 on the node (volumeAttributes.encryption, as the plugin reads it).
func encrypted(attrs map[string]string) bool {
	return strings.ToLower(strings.TrimSpace(attrs["encryption"])) == "luks2"
}

func checkAttributes(o *Object, attrs map[string]string) {
	transport := inferTransport(attrs)
	known, ok := transportKeys[transport]
	if !ok {
		o.fail("volumeAttributes name no known transport (iscsi, fc, local, nvme-tcp): %q", transport)
		return
	}
	for k := range attrs {
		if !known[k] {
			o.fail("volumeAttributes.%s is not a key of the %s transport", k, transport)
		}
	}
	if mode, ok := attrs["fencing"]; ok && !fencingModes[transport][mode] {
		o.fail("volumeAttributes.fencing %q is not one the %s transport takes (%s)", mode, transport,
			strings.Join(sortedKeys(fencingModes[transport]), ", "))
	}
	if mode, ok := attrs["fsck"]; ok && mode != "preen" && mode != "off" {
		o.fail("volumeAttributes.fsck %q is not preen or off", mode)
	}
	if mode, ok := attrs["encryption"]; ok && strings.ToLower(strings.TrimSpace(mode)) != "luks2" &&
		strings.ToLower(strings.TrimSpace(mode)) != "none" && strings.TrimSpace(mode) != "" {
		o.fail("volumeAttributes.encryption %q is not luks2 or none", mode)
	}
	// Each value that names storage, by the plugin's own format (keyformats.go).
	valueOK := func(key, value, formatName string) {
		if f := format(formatName); !f.accepts(value) {
			o.fail("volumeAttributes.%s %q is not %s (%s)", key, value, f.Noun, f.Description)
		}
	}
	listOK := func(key, formatName string, split func(string) []string) {
		for _, item := range split(attrs[key]) {
			valueOK(key, item, formatName)
		}
	}
	switch transport {
	case "iscsi":
		for _, k := range []string{"targetPortal", "iqn", "lun"} {
			if attrs[k] == "" {
				o.fail("volumeAttributes.%s is required by the iscsi transport", k)
			}
		}
		if lun := attrs["lun"]; lun != "" {
			valueOK("lun", lun, "iscsiLun")
		}
		if iqn := attrs["iqn"]; iqn != "" {
			if lower := strings.ToLower(iqn); !format("iscsiName").accepts(lower) {
				valueOK("iqn", iqn, "iscsiName")
			} else if lower != iqn {
				o.fail("volumeAttributes.iqn %q has capitals: write it in lower case (%q), as iSCSI names are "+
					"normalised (RFC 3722) and compared byte by byte", iqn, lower)
			}
		}
		if p := attrs["targetPortal"]; p != "" {
			valueOK("targetPortal", p, "iscsiPortal")
		}
		listOK("portals", "iscsiPortal", list)
		if w := attrs["wwid"]; w != "" {
			valueOK("wwid", w, "wwid")
		}
	case "fc":
		listOK("wwids", "wwid", entries)
		listOK("wwid", "wwid", entries)
		switch {
		case attrs["wwids"] != "":
		case attrs["targetWWNs"] != "" && attrs["lun"] != "":
			valueOK("lun", attrs["lun"], "fcLun")
			listOK("targetWWNs", "wwpn", entries)
		default:
			o.fail("the fc transport needs targetWWNs and lun, or wwids")
		}
	case "local":
		if !strings.HasPrefix(attrs["devicePath"], "/dev/") {
			o.fail("volumeAttributes.devicePath must be a path under /dev")
		}
		if w := attrs["wwid"]; w != "" {
			valueOK("wwid", w, "deviceWwid")
		}
	case "nvme-tcp":
		for _, k := range []string{"subsysNQN", "nvmePortals"} {
			if attrs[k] == "" {
				o.fail("volumeAttributes.%s is required by the nvme-tcp transport", k)
			}
		}
		for _, k := range []string{"subsysNQN", "hostNQN"} {
			if nqn := attrs[k]; nqn != "" {
				valueOK(k, nqn, "nqn")
			}
		}
		for _, p := range list(attrs["nvmePortals"]) {
			host, _, err := net.SplitHostPort(p)
			if err != nil {
				host = strings.Trim(p, "[]")
			}
			// The format gives an IPv6 literal's shape; that it is an address, the platform says (as in the plugin).
			if !format("nvmePortal").accepts(p) || net.ParseIP(host) == nil {
				f := format("nvmePortal")
				o.fail("volumeAttributes.nvmePortals %q is not %s (%s)", p, f.Noun, f.Description)
			}
		}
		if attrs["namespaceNGUID"] == "" && attrs["namespaceEUI64"] == "" && attrs["namespaceUUID"] == "" {
			o.fail("the nvme-tcp transport needs namespaceNGUID, namespaceEUI64 or namespaceUUID (the identity checked before use)")
		}
		if id := attrs["namespaceID"]; id != "" {
			if n, err := strconv.ParseUint(id, 10, 32); err != nil || n == 0 {
				o.fail("volumeAttributes.namespaceID %q is not a namespace ID", id)
			}
		}
	}
}

// ---- Secrets (CHAP) --------------------------------------------------------------------------------------

func checkSecret(o *Object, sec *corev1.Secret, s *objectSet) {
	has := map[string]bool{}
	for k := range sec.StringData {
		has[k] = true
	}
	for k := range sec.Data {
		has[k] = true
	}
	for k := range has {
		if !stageSecretKeys[k] {
			o.fail("key %q is not a node-stage secret the plugin reads (node.session.auth.username/password[_in], dhchap_secret, dhchap_ctrl_secret, encryptionPassphrase)", k)
		}
	}
	for _, suffix := range []string{"", "_in"} {
		u, p := has["node.session.auth.username"+suffix], has["node.session.auth.password"+suffix]
		if u != p {
			o.fail("node.session.auth.username%s and node.session.auth.password%s go together", suffix, suffix)
		}
	}
	if has["node.session.auth.username_in"] && !has["node.session.auth.username"] {
		o.fail("mutual CHAP (_in) needs the one-way credentials as well")
	}
}

// ---- PersistentVolumeClaims and Pods -------------------------------------------------------------------

func modeOf(m *corev1.PersistentVolumeMode) corev1.PersistentVolumeMode {
	if m == nil {
		return corev1.PersistentVolumeFilesystem
	}
	return *m
}

func checkPVC(o *Object, pvc *corev1.PersistentVolumeClaim, s *objectSet) {
	if pvc.Spec.VolumeName == "" {
		o.fail("spec.volumeName is empty: a static blocknode volume binds to a named PV")
		return
	}
	pvObj := s.get("PersistentVolume", "", pvc.Spec.VolumeName)
	if pvObj == nil {
		o.fail("volumeName %q: no such PersistentVolume in this set", pvc.Spec.VolumeName)
		return
	}
	pv := pvObj.Value.(*corev1.PersistentVolume)
	if pvc.Spec.StorageClassName == nil {
		o.fail("storageClassName must be set (\"\" for none), or the default StorageClass is filled in and the claim never binds")
	} else if *pvc.Spec.StorageClassName != pv.Spec.StorageClassName {
		o.fail("storageClassName %q differs from PV %s's %q", *pvc.Spec.StorageClassName, pv.Name, pv.Spec.StorageClassName)
	}
	if modeOf(pvc.Spec.VolumeMode) != modeOf(pv.Spec.VolumeMode) {
		o.fail("volumeMode %s differs from PV %s's %s", modeOf(pvc.Spec.VolumeMode), pv.Name, modeOf(pv.Spec.VolumeMode))
	}
	for _, m := range pvc.Spec.AccessModes {
		found := false
		for _, pm := range pv.Spec.AccessModes {
			found = found || pm == m
		}
		if !found {
			o.fail("access mode %s is not offered by PV %s", m, pv.Name)
		}
	}
	req, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	if !ok {
		o.fail("resources.requests.storage is missing")
	} else if req.Cmp(capacity) > 0 {
		o.fail("requests %s, more than PV %s's capacity %s", req.String(), pv.Name, capacity.String())
	}
}

func checkPodClaims(o *Object, pod *corev1.Pod, s *objectSet) {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvcObj := s.get("PersistentVolumeClaim", pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		if pvcObj == nil {
			o.fail("volume %s: no PersistentVolumeClaim %s/%s in this set", v.Name, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
			continue
		}
		block := modeOf(pvcObj.Value.(*corev1.PersistentVolumeClaim).Spec.VolumeMode) == corev1.PersistentVolumeBlock
		for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
			for _, m := range c.VolumeMounts {
				if m.Name == v.Name && block {
					o.fail("container %s mounts Block volume %s: use volumeDevices", c.Name, v.Name)
				}
			}
			for _, d := range c.VolumeDevices {
				if d.Name == v.Name && !block {
					o.fail("container %s lists Filesystem volume %s under volumeDevices: use volumeMounts", c.Name, v.Name)
				}
			}
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
