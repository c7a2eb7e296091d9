// Command liveness runs blocknode beside the real livenessprobe sidecar, as the DaemonSet does, and checks
// what kubelet's livenessProbe would see on livenessprobe's /healthz: 200 while the plugin is healthy, 500
// when the plugin is gone, 500 when the plugin runs but its Probe says it is not ready (a host tool it needs
// is missing), and 200 again once a healthy plugin is back on the same socket. It prints one line per check
// and closes with "liveness: N passed, M failed".
//
// With -load it also measures /healthz (livenessprobe's call of the plugin's Probe, plus HTTP) while CPU
// hogs keep every core busy, and checks the slowest answer against the probe timeout.
//
// The missing tool is real, not a hook in the plugin: the plugin looks for its tools on a fixed search path
// (ToolLocator.SEARCH_PATH), so the harness starts that plugin in a mount namespace of its own in which an
// empty, non-executable file is bind-mounted over the tool. The namespace, and the mount with it, ends with
// the plugin. This needs root (CAP_SYS_ADMIN).
//
// run.sh gets livenessprobe and runs this; see README.md.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"blocknode/test-e2e/harness"
)

var (
	javaBin       = flag.String("java", "java", "java executable")
	pluginJar     = flag.String("jar", "", "the plugin jar (java/target/blocknode.jar)")
	probeBin      = flag.String("livenessprobe", "", "the livenessprobe executable")
	probeLabel    = flag.String("livenessprobe-label", "", "how to name livenessprobe in the output")
	probeTimeout  = flag.Duration("probe-timeout", 3*time.Second, "livenessprobe's --probe-timeout (the DaemonSet's)")
	httpTimeout   = flag.Duration("http-timeout", 5*time.Second, "timeout of each GET /healthz (the DaemonSet's livenessProbe timeoutSeconds)")
	workDir       = flag.String("work", "", "an empty, short directory for the socket, state and logs")
	hideTool      = flag.String("hide-tool", "mkfs.xfs", "the host tool the not-ready plugin does not find")
	startDeadline = flag.Duration("start-deadline", 60*time.Second, "how long a process may take to listen")
	stateDeadline = flag.Duration("state-deadline", 30*time.Second, "how long /healthz may take to reflect a change")
	stopDeadline  = flag.Duration("stop-deadline", 60*time.Second, "how long a process may take to exit after SIGTERM")
	healthySample = flag.Int("samples", 50, "GETs of /healthz timed on the idle machine")
	load          = flag.Duration("load", 0, "if set: also time /healthz for this long with every core busy")
	hogCount      = flag.Int("hogs", runtime.NumCPU(), "with -load: how many busy-looping processes")
)

// The plugin's fixed tool search path (java/.../os/exec/ToolLocator.SEARCH_PATH).
var searchPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// ---------------------------------------------------------------------------------------------- waiting

type answer struct {
	status int
	body   string
	took   time.Duration
}

func (a answer) String() string {
	return fmt.Sprintf("%d %q in %s", a.status, a.body, a.took.Round(time.Microsecond))
}

var client = &http.Client{}

// healthz asks livenessprobe once, as kubelet's httpGet probe does (a fresh connection each time).
func healthz(addr string) (answer, error) {
	client.Timeout = *httpTimeout
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/healthz", nil)
	req.Close = true
	began := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return answer{resp.StatusCode, strings.TrimSpace(string(body)), time.Since(began)}, nil
}

// waitForHealthz polls /healthz until ok accepts an answer or the deadline passes; it returns that answer
// and how long the wait took, or the last thing seen.
func waitForHealthz(addr string, deadline time.Duration, ok func(answer) bool) (answer, time.Duration, error) {
	began := time.Now()
	var last string
	for {
		a, err := healthz(addr)
		if err == nil && ok(a) {
			return a, time.Since(began).Round(time.Millisecond), nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = a.String()
		}
		if time.Since(began) > deadline {
			return a, 0, fmt.Errorf("not within %s; last: %s", deadline, last)
		}
		time.Sleep(20 * time.Millisecond) // poll interval, bounded by the deadline above
	}
}

func is200(a answer) bool { return a.status == http.StatusOK }

// ---------------------------------------------------------------------------------------------- helpers run as children

// hideAndExec runs in a fresh mount namespace (SysProcAttr.Unshareflags; Go marks / private there first):
// it bind-mounts cover over every target and execs argv. The mounts live as long as the namespace.
func hideAndExec(args []string) {
	sep := slices.Index(args, "--")
	if sep < 1 || sep == len(args)-1 {
		fmt.Fprintln(os.Stderr, "usage: liveness hide-and-exec COVER TARGET... -- ARGV...")
		os.Exit(2)
	}
	cover, targets, argv := args[0], args[1:sep], args[sep+1:]
	for _, target := range targets {
		if err := syscall.Mount(cover, target, "", syscall.MS_BIND, ""); err != nil {
			fmt.Fprintf(os.Stderr, "hide-and-exec: bind %s over %s: %v\n", cover, target, err)
			os.Exit(2)
		}
	}
	err := syscall.Exec(argv[0], argv, os.Environ())
	fmt.Fprintf(os.Stderr, "hide-and-exec: exec %s: %v\n", argv[0], err)
	os.Exit(2)
}

// hog keeps one core busy until it is killed.
func hog() {
	x := uint64(1)
	for {
		x = x*6364136223846793005 + 1442695040888963407
	}
}

// toolPaths finds tool on the plugin's search path, as ToolLocator does: every distinct file it could
// take (a symlinked directory such as /sbin -> usr/sbin names the same file twice).
func toolPaths(tool string) []string {
	var found []string
	for _, dir := range searchPath {
		path, err := filepath.EvalSymlinks(filepath.Join(dir, tool))
		if err != nil {
			continue
		}
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 &&
			!slices.Contains(found, path) {
			found = append(found, path)
		}
	}
	return found
}

// ---------------------------------------------------------------------------------------------- the test

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "hide-and-exec":
			hideAndExec(os.Args[2:])
		case "hog":
			hog()
		}
	}
	flag.Parse()
	if *pluginJar == "" || *probeBin == "" || *workDir == "" {
		fmt.Fprintln(os.Stderr, "usage: liveness -jar PLUGIN_JAR -livenessprobe LIVENESSPROBE -work DIR [-java JAVA] [-load 30s]")
		os.Exit(2)
	}
	os.Exit(run())
}

var checks harness.Checks

func run() (code int) {
	// The plugin is restarted into one log, which keeps each run; livenessprobe has no SIGTERM handler (it has
	// nothing to clean up), so death by that signal is a clean stop.
	children := &harness.Runner{Dir: *workDir, AppendLogs: true, StopDeadline: *stopDeadline, SIGTERMMayKill: true}
	socket := filepath.Join(*workDir, "plugin", "csi.sock")
	logs := filepath.Join(*workDir, "logs")
	blocknode := harness.Plugin{Java: *javaBin, Jar: *pluginJar, Socket: socket, NodeID: "liveness-node", WorkDir: *workDir}
	for _, dir := range append([]string{filepath.Dir(socket), logs}, blocknode.Dirs()...) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	label := *probeLabel
	if label == "" {
		label = *probeBin
	}
	fmt.Printf("livenessprobe: %s\nplugin:        %s\nwork dir:      %s\n\n", label, *pluginJar, *workDir)

	pluginLog := filepath.Join(logs, "plugin.log")
	pluginArgv := blocknode.Argv()

	var plugin, probe *harness.Process
	var hogs []*harness.Process
	defer func() {
		for _, p := range append(hogs, probe, plugin) {
			p.Kill()
		}
		if checks.Failed > 0 {
			harness.PrintLogTails(plugin, probe)
		}
		code = checks.Finish("liveness", code)
	}()

	// startPlugin starts the plugin (in a namespace without the hidden tool when hiding) and waits for its socket.
	startPlugin := func(what string, hiding []string) bool {
		argv, attr := pluginArgv, (*syscall.SysProcAttr)(nil)
		if len(hiding) > 0 {
			self, err := os.Executable()
			if err != nil {
				checks.Fail(what+" starts", err)
				return false
			}
			cover := filepath.Join(*workDir, "not-an-executable")
			if err := os.WriteFile(cover, nil, 0o644); err != nil {
				checks.Fail(what+" starts", err)
				return false
			}
			argv = append(append(append([]string{self, "hide-and-exec", cover}, hiding...), "--"), pluginArgv...)
			attr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
		}
		var err error
		plugin, err = children.Start("plugin", pluginLog, attr, argv...)
		if !checks.Check(what+" starts", err, "pid "+strconv.Itoa(plugin.Pid())) {
			return false
		}
		took, err := harness.WaitForSocket(socket, plugin, *startDeadline)
		return checks.Check(what+" socket answers", err, fmt.Sprintf("after %s", took))
	}

	// 1. A healthy plugin, then livenessprobe as the DaemonSet runs it.
	if !startPlugin("plugin", nil) {
		return 1
	}
	httpAddr, err := harness.FreeLoopbackAddr()
	if err != nil {
		checks.Fail("free port for livenessprobe", err)
		return 1
	}
	probe, err = children.Start("livenessprobe", filepath.Join(logs, "livenessprobe.log"), nil, *probeBin,
		"--csi-address="+socket, "--http-endpoint="+httpAddr, "--probe-timeout="+probeTimeout.String())
	if !checks.Check("livenessprobe starts", err, fmt.Sprintf("pid %d, --probe-timeout=%s", probe.Pid(), *probeTimeout)) {
		return 1
	}
	a, took, err := waitForHealthz(httpAddr, *startDeadline, is200)
	if !checks.Check("healthy plugin: /healthz 200", err, fmt.Sprintf("%s (after %s)", a, took)) {
		return 1
	}

	// 2. How long /healthz takes on this machine now; every answer must be 200 and within the timeouts.
	idle, err := sample(httpAddr, *healthySample, 0)
	checks.Check(fmt.Sprintf("%d GETs, all 200, within %s", *healthySample, *probeTimeout), err, idle.String())

	// 3. The same with every core busy (only with -load: it takes the machine for that long).
	if *load > 0 {
		self, err := os.Executable()
		if err != nil {
			checks.Fail("CPU hogs", err)
			return 1
		}
		for i := 0; i < *hogCount; i++ {
			h, err := children.Start(fmt.Sprintf("hog%d", i), filepath.Join(logs, "hogs.log"), nil, self, "hog", *workDir)
			if err != nil {
				checks.Fail("CPU hogs", err)
				return 1
			}
			hogs = append(hogs, h)
		}
		loaded, err := sample(httpAddr, 0, *load)
		for _, h := range hogs {
			h.Kill()
		}
		hogs = nil
		checks.Check(fmt.Sprintf("under load (%d hogs, %d cores, %s): all 200, within %s", *hogCount, runtime.NumCPU(),
			*load, *probeTimeout),
			err, loaded.String())
	}

	// 4. The plugin is gone (killed, no cleanup: its socket file stays): 500.
	plugin.Kill()
	a, took, err = waitForHealthz(httpAddr, *stateDeadline, func(a answer) bool { return a.status == 500 })
	checks.Check("plugin killed: /healthz 500", err, fmt.Sprintf("%s (after %s)", a, took))
	if probe.Exited() {
		checks.Fail("livenessprobe runs on without the plugin", fmt.Errorf("exited: %v", probe.Err()))
		return 1
	}
	checks.Pass("livenessprobe runs on without the plugin", "")

	// 5. The plugin back on the same socket, but a tool it needs is missing: its Probe says not ready.
	hiding := toolPaths(*hideTool)
	if len(hiding) == 0 {
		checks.Fail("find "+*hideTool, fmt.Errorf("not on the plugin's search path %s: the machine lacks it (make deps)",
			strings.Join(searchPath, ":")))
		return 1
	}
	if !startPlugin("plugin without "+*hideTool, hiding) {
		return 1
	}
	checks.Check("the host's mount table untouched", mountedOn(hiding), fmt.Sprintf("%s hidden from the plugin only",
		strings.Join(hiding, ", ")))
	a, took, err = waitForHealthz(httpAddr, *stateDeadline, func(a answer) bool {
		return a.status == 500 && strings.Contains(a.body, "host tools missing: "+*hideTool)
	})
	checks.Check("plugin not ready: /healthz 500", err, fmt.Sprintf("%s (after %s)", a, took))
	status, err := plugin.Stop()
	checks.Check("not-ready plugin exits on SIGTERM", err, status)

	// 6. A healthy plugin again on the same socket: livenessprobe reconnects and answers 200.
	if !startPlugin("healthy plugin again", nil) {
		return 1
	}
	a, took, err = waitForHealthz(httpAddr, *stateDeadline, is200)
	checks.Check("plugin back: /healthz 200", err, fmt.Sprintf("%s (after %s)", a, took))

	// 7. Teardown: livenessprobe, then the plugin; nothing may be left.
	status, err = probe.Stop()
	checks.Check("livenessprobe exits on SIGTERM", err, status)
	status, err = plugin.Stop()
	checks.Check("plugin exits on SIGTERM", err, status)
	checks.Check("nothing left running", children.NothingLeft(), "")
	return 0
}

// latencies summarises timed GETs.
type latencies []time.Duration

func (l latencies) String() string {
	if len(l) == 0 {
		return "no samples"
	}
	s := slices.Clone(l)
	slices.Sort(s)
	at := func(q float64) time.Duration {
		return s[min(len(s)-1, int(q*float64(len(s))))].Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("n=%d median %s p90 %s p99 %s max %s", len(s), at(0.5), at(0.9), at(0.99),
		s[len(s)-1].Round(10*time.Microsecond))
}

// sample GETs /healthz back to back, count times or for the given duration; any answer other than a
// 200 within the probe timeout is an error.
func sample(addr string, count int, duration time.Duration) (latencies, error) {
	var l latencies
	began := time.Now()
	for i := 0; count > 0 && i < count || duration > 0 && time.Since(began) < duration; i++ {
		a, err := healthz(addr)
		if err != nil {
			return l, fmt.Errorf("GET %d: %v (so far: %s)", i+1, err, l)
		}
		l = append(l, a.took)
		if a.status != http.StatusOK {
			return l, fmt.Errorf("GET %d: %s (so far: %s)", i+1, a, l)
		}
		if a.took > *probeTimeout {
			return l, fmt.Errorf("GET %d took %s, longer than --probe-timeout %s (so far: %s)", i+1, a.took,
				*probeTimeout, l)
		}
	}
	return l, nil
}

// mountedOn fails if anything is mounted on one of paths in this process's (the host's) mount namespace.
func mountedOn(paths []string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && slices.Contains(paths, f[4]) {
			return fmt.Errorf("mounted on the host: %s", line)
		}
	}
	return nil
}
