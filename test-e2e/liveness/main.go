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
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
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

// ---------------------------------------------------------------------------------------------- checks

var passed, failed int

func pass(name, detail string) {
	passed++
	fmt.Printf("PASS  %-44s %s\n", name, detail)
}

func fail(name string, err error) {
	failed++
	fmt.Printf("FAIL  %-44s %v\n", name, err)
}

func check(name string, err error, detail string) bool {
	if err != nil {
		fail(name, err)
		return false
	}
	pass(name, detail)
	return true
}

// ---------------------------------------------------------------------------------------------- processes

type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // Wait's result, once done is closed
}

func start(name, logPath string, attr *syscall.SysProcAttr, argv ...string) (*proc, error) {
	logFile, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logFile, "=== %s: %s\n", name, strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	// Own process group, and killed if this harness dies.
	attr.Setpgid, attr.Pdeathsig = true, syscall.SIGKILL
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	// run.sh's trap kills whatever is listed here should this harness itself be killed.
	if f, err := os.OpenFile(filepath.Join(*workDir, "pids"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintf(f, "%d\n", cmd.Process.Pid)
		f.Close()
	}
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits up to the stop deadline. Clean: exit 0, 143 (the JVM after its shutdown
// hooks ran), or death by that SIGTERM (livenessprobe installs no handler for it: it has nothing to clean).
func (p *proc) stop() (string, error) {
	if p.exited() {
		return "", fmt.Errorf("%s had already exited (%v) before SIGTERM", p.name, p.err)
	}
	began := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return "", err
	}
	select {
	case <-p.done:
	case <-time.After(*stopDeadline):
		return "", fmt.Errorf("%s still running %s after SIGTERM", p.name, *stopDeadline)
	}
	took := time.Since(began).Round(time.Millisecond)
	var exitErr *exec.ExitError
	if errors.As(p.err, &exitErr) {
		ws, _ := exitErr.Sys().(syscall.WaitStatus)
		if exitErr.ExitCode() != 143 && !(ws.Signaled() && ws.Signal() == syscall.SIGTERM) {
			return "", fmt.Errorf("%s ended with %s after SIGTERM", p.name, exitErr.ProcessState)
		}
		return fmt.Sprintf("%s in %s", exitErr.ProcessState, took), nil
	} else if p.err != nil {
		return "", p.err
	}
	return fmt.Sprintf("exit 0 in %s", took), nil
}

// kill ends the process group at once and waits for the process.
func (p *proc) kill() {
	if p != nil && !p.exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func tail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return "    | " + strings.Join(all, "\n    | ")
}

// leftovers lists the processes (other than this one) whose command line mentions the work directory.
func leftovers() []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), *workDir) {
			found = append(found, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return found
}

// ---------------------------------------------------------------------------------------------- waiting

// waitForSocket polls until socket accepts a connection, the process has exited, or the deadline passes.
func waitForSocket(socket string, p *proc) (time.Duration, error) {
	began := time.Now()
	deadline := began.Add(*startDeadline)
	for {
		if c, err := net.DialTimeout("unix", socket, time.Second); err == nil {
			c.Close()
			return time.Since(began).Round(time.Millisecond), nil
		}
		if p.exited() {
			return 0, fmt.Errorf("%s exited (%v) before %s answered", p.name, p.err, socket)
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s did not answer within %s", socket, *startDeadline)
		}
		select {
		case <-p.done:
		case <-time.After(20 * time.Millisecond): // poll interval, bounded by the deadline above
		}
	}
}

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

func run() (code int) {
	socket := filepath.Join(*workDir, "plugin", "csi.sock")
	logs := filepath.Join(*workDir, "logs")
	for _, dir := range []string{filepath.Dir(socket), logs, filepath.Join(*workDir, "kubelet"), filepath.Join(*workDir, "state")} {
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
	pluginArgv := []string{*javaBin, "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1",
		"-XX:+UseSerialGC", "-jar", *pluginJar,
		"--endpoint", "unix://" + socket,
		"--node-id", "liveness-node",
		"--kubelet-root", filepath.Join(*workDir, "kubelet"),
		"--state-dir", filepath.Join(*workDir, "state"),
		"--log-format", "text"}

	var plugin, probe *proc
	var hogs []*proc
	defer func() {
		for _, p := range append(hogs, probe, plugin) {
			p.kill()
		}
		if failed > 0 {
			for _, p := range []*proc{plugin, probe} {
				if p != nil {
					fmt.Printf("\n--- last lines of %s (%s)\n%s\n", p.name, p.log, tail(p.log, 30))
				}
			}
		}
		fmt.Printf("\nliveness: %d passed, %d failed\n", passed, failed)
		if failed > 0 && code == 0 {
			code = 1
		}
	}()

	// startPlugin starts the plugin (in a namespace without the hidden tool when hiding) and waits for its socket.
	startPlugin := func(what string, hiding []string) bool {
		argv, attr := pluginArgv, (*syscall.SysProcAttr)(nil)
		if len(hiding) > 0 {
			self, err := os.Executable()
			if err != nil {
				fail(what+" starts", err)
				return false
			}
			cover := filepath.Join(*workDir, "not-an-executable")
			if err := os.WriteFile(cover, nil, 0o644); err != nil {
				fail(what+" starts", err)
				return false
			}
			argv = append(append(append([]string{self, "hide-and-exec", cover}, hiding...), "--"), pluginArgv...)
			attr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
		}
		var err error
		plugin, err = start("plugin", pluginLog, attr, argv...)
		if !check(what+" starts", err, "pid "+strconv.Itoa(pidOf(plugin))) {
			return false
		}
		took, err := waitForSocket(socket, plugin)
		return check(what+" socket answers", err, fmt.Sprintf("after %s", took))
	}

	// 1. A healthy plugin, then livenessprobe as the DaemonSet runs it.
	if !startPlugin("plugin", nil) {
		return 1
	}
	httpAddr, err := freeLoopbackAddr()
	if err != nil {
		fail("free port for livenessprobe", err)
		return 1
	}
	probe, err = start("livenessprobe", filepath.Join(logs, "livenessprobe.log"), nil, *probeBin,
		"--csi-address="+socket, "--http-endpoint="+httpAddr, "--probe-timeout="+probeTimeout.String())
	if !check("livenessprobe starts", err, fmt.Sprintf("pid %d, --probe-timeout=%s", pidOf(probe), *probeTimeout)) {
		return 1
	}
	a, took, err := waitForHealthz(httpAddr, *startDeadline, is200)
	if !check("healthy plugin: /healthz 200", err, fmt.Sprintf("%s (after %s)", a, took)) {
		return 1
	}

	// 2. How long /healthz takes on this machine now; every answer must be 200 and within the timeouts.
	idle, err := sample(httpAddr, *healthySample, 0)
	check(fmt.Sprintf("%d GETs, all 200, within %s", *healthySample, *probeTimeout), err, idle.String())

	// 3. The same with every core busy (only with -load: it takes the machine for that long).
	if *load > 0 {
		self, err := os.Executable()
		if err != nil {
			fail("CPU hogs", err)
			return 1
		}
		for i := 0; i < *hogCount; i++ {
			h, err := start(fmt.Sprintf("hog%d", i), filepath.Join(logs, "hogs.log"), nil, self, "hog", *workDir)
			if err != nil {
				fail("CPU hogs", err)
				return 1
			}
			hogs = append(hogs, h)
		}
		loaded, err := sample(httpAddr, 0, *load)
		for _, h := range hogs {
			h.kill()
		}
		hogs = nil
		check(fmt.Sprintf("under load (%d hogs, %d cores, %s): all 200, within %s", *hogCount, runtime.NumCPU(),
			*load, *probeTimeout),
			err, loaded.String())
	}

	// 4. The plugin is gone (killed, no cleanup: its socket file stays): 500.
	plugin.kill()
	a, took, err = waitForHealthz(httpAddr, *stateDeadline, func(a answer) bool { return a.status == 500 })
	check("plugin killed: /healthz 500", err, fmt.Sprintf("%s (after %s)", a, took))
	if probe.exited() {
		fail("livenessprobe runs on without the plugin", fmt.Errorf("exited: %v", probe.err))
		return 1
	}
	pass("livenessprobe runs on without the plugin", "")

	// 5. The plugin back on the same socket, but a tool it needs is missing: its Probe says not ready.
	hiding := toolPaths(*hideTool)
	if len(hiding) == 0 {
		fail("find "+*hideTool, fmt.Errorf("not on the plugin's search path %s: the machine lacks it (make deps)",
			strings.Join(searchPath, ":")))
		return 1
	}
	if !startPlugin("plugin without "+*hideTool, hiding) {
		return 1
	}
	check("the host's mount table untouched", mountedOn(hiding), fmt.Sprintf("%s hidden from the plugin only",
		strings.Join(hiding, ", ")))
	a, took, err = waitForHealthz(httpAddr, *stateDeadline, func(a answer) bool {
		return a.status == 500 && strings.Contains(a.body, "host tools missing: "+*hideTool)
	})
	check("plugin not ready: /healthz 500", err, fmt.Sprintf("%s (after %s)", a, took))
	status, err := plugin.stop()
	check("not-ready plugin exits on SIGTERM", err, status)

	// 6. A healthy plugin again on the same socket: livenessprobe reconnects and answers 200.
	if !startPlugin("healthy plugin again", nil) {
		return 1
	}
	a, took, err = waitForHealthz(httpAddr, *stateDeadline, is200)
	check("plugin back: /healthz 200", err, fmt.Sprintf("%s (after %s)", a, took))

	// 7. Teardown: livenessprobe, then the plugin; nothing may be left.
	status, err = probe.stop()
	check("livenessprobe exits on SIGTERM", err, status)
	status, err = plugin.stop()
	check("plugin exits on SIGTERM", err, status)
	var left error
	if l := leftovers(); len(l) > 0 {
		left = fmt.Errorf("still running: %s", strings.Join(l, "; "))
	}
	check("nothing left running", left, "")
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

func pidOf(p *proc) int {
	if p == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
