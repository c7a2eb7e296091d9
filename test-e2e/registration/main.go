// Command registration plays kubelet against blocknode and a node-driver-registrar binary: it starts the
// plugin and the registrar, then does what kubelet's plugin watcher and CSI plugin handler do when a
// registration socket appears (pkg/kubelet/pluginmanager/operationexecutor, GenerateRegisterPluginFunc):
//
//	Registration.GetInfo -> validate type, name, endpoint, versions -> NodeGetInfo on the endpoint
//	-> Registration.NotifyRegistrationStatus(plugin_registered=true)
//
// then checks the registrar's /healthz, stops both with SIGTERM and checks that they cleaned up after
// themselves. It prints one line per check and closes with "registration: N passed, M failed".
//
// run.sh builds or finds the registrar and runs this; see README.md.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

const (
	driverName = "block.csi.blocknode.dev"
	nodeID     = "reg-node"
	// Where the plugin's socket is on the host, as the DaemonSet mounts it (deploy/); what the registrar
	// hands kubelet as the endpoint. In this test nothing is at that path: the harness dials the socket
	// that stands for it (the plugin's --endpoint), as kubelet would dial the hostPath a pod's /csi is.
	kubeletRegistrationPath = "/var/lib/kubelet/plugins/" + driverName + "/csi.sock"
)

var (
	javaBin       = flag.String("java", "java", "java executable")
	pluginJar     = flag.String("jar", "", "the plugin jar (java/target/blocknode.jar)")
	registrarBin  = flag.String("registrar", "", "the node-driver-registrar executable")
	registrarName = flag.String("registrar-label", "", "how to name the registrar in the output")
	workDir       = flag.String("work", "", "an empty, short directory for sockets, state and logs")
	startDeadline = flag.Duration("start-deadline", 60*time.Second, "how long a process may take to listen")
	stopDeadline  = flag.Duration("stop-deadline", 60*time.Second, "how long a process may take to exit after SIGTERM")
	callTimeout   = flag.Duration("call-timeout", 10*time.Second, "timeout of each gRPC/HTTP call")
)

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

// check records err as the outcome of name and reports whether it passed.
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

func start(name, logPath string, argv ...string) (*proc, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Own process group (so a leftover child can be killed as a group), and killed if this harness dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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

// stop sends SIGTERM and waits up to the stop deadline; it reports how the process ended.
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
	status := "exit 0"
	var exitErr *exec.ExitError
	if errors.As(p.err, &exitErr) {
		status = exitErr.ProcessState.String()
		// 143 = 128 + SIGTERM: the JVM's status after its shutdown hooks ran on SIGTERM.
		if code := exitErr.ExitCode(); code != 143 {
			return "", fmt.Errorf("%s ended with %s after SIGTERM", p.name, status)
		}
	} else if p.err != nil {
		return "", p.err
	}
	return fmt.Sprintf("%s in %s", status, took), nil
}

// kill ends the process group at once; used only when the test is failing.
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

// ---------------------------------------------------------------------------------------------- waiting

func dial(socket string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// waitForSocket polls until socket exists as a socket and accepts a connection, the process has exited,
// or the start deadline passes.
func waitForSocket(socket string, p *proc) (time.Duration, error) {
	began := time.Now()
	deadline := began.Add(*startDeadline)
	for {
		if fi, err := os.Stat(socket); err == nil && fi.Mode()&os.ModeSocket != 0 {
			if c, err := net.DialTimeout("unix", socket, time.Second); err == nil {
				c.Close()
				return time.Since(began).Round(time.Millisecond), nil
			}
		}
		if p.exited() {
			return 0, fmt.Errorf("%s exited (%v) before %s answered", p.name, p.err, socket)
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s did not answer within %s", socket, *startDeadline)
		}
		select {
		case <-p.done:
		case <-time.After(50 * time.Millisecond):
		}
	}
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
		if err != nil {
			continue
		}
		if strings.Contains(string(cmdline), *workDir) {
			found = append(found, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return found
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// ---------------------------------------------------------------------------------------------- the test

func main() {
	flag.Parse()
	if *pluginJar == "" || *registrarBin == "" || *workDir == "" {
		fmt.Fprintln(os.Stderr, "usage: registration -jar PLUGIN_JAR -registrar REGISTRAR -work DIR [-java JAVA]")
		os.Exit(2)
	}
	os.Exit(run())
}

func run() (code int) {
	pluginDir := filepath.Join(*workDir, "plugin")
	registryDir := filepath.Join(*workDir, "plugins_registry")
	logs := filepath.Join(*workDir, "logs")
	for _, dir := range []string{pluginDir, registryDir, logs, filepath.Join(*workDir, "kubelet"), filepath.Join(*workDir, "state")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	pluginSock := filepath.Join(pluginDir, "csi.sock")
	regSock := filepath.Join(registryDir, driverName+"-reg.sock")
	// On GetInfo the registrar touches <dir of --kubelet-registration-path>/registration for its
	// kubelet-registration-probe mode. That is a host path: remove it afterwards if this run made it.
	probeFile := filepath.Join(filepath.Dir(kubeletRegistrationPath), "registration")
	probeFileBefore := exists(probeFile)

	label := *registrarName
	if label == "" {
		label = *registrarBin
	}
	fmt.Printf("registrar: %s\nplugin:    %s\nwork dir:  %s\n\n", label, *pluginJar, *workDir)

	var plugin, registrar *proc
	defer func() {
		// On any early return: kill what still runs, show the logs, and report.
		if registrar != nil && !registrar.exited() || plugin != nil && !plugin.exited() {
			registrar.kill()
			plugin.kill()
		}
		if failed > 0 {
			for _, p := range []*proc{plugin, registrar} {
				if p != nil {
					fmt.Printf("\n--- last lines of %s (%s)\n%s\n", p.name, p.log, tail(p.log, 30))
				}
			}
		}
		if !probeFileBefore && exists(probeFile) {
			_ = os.Remove(probeFile)
		}
		fmt.Printf("\nregistration: %d passed, %d failed\n", passed, failed)
		if failed > 0 && code == 0 {
			code = 1
		}
	}()

	// 1. The plugin, as the DaemonSet's blocknode container runs it.
	var err error
	plugin, err = start("plugin", filepath.Join(logs, "plugin.log"), *javaBin,
		"--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
		"-jar", *pluginJar,
		"--endpoint", "unix://"+pluginSock,
		"--node-id", nodeID,
		"--kubelet-root", filepath.Join(*workDir, "kubelet"),
		"--state-dir", filepath.Join(*workDir, "state"),
		"--log-format", "text")
	if !check("plugin starts", err, "pid "+pidOf(plugin)) {
		return 1
	}
	took, err := waitForSocket(pluginSock, plugin)
	if !check("plugin socket answers", err, fmt.Sprintf("%s after %s", pluginSock, took)) {
		return 1
	}
	pluginConn, err := dial(pluginSock)
	if err != nil {
		fail("plugin connection", err)
		return 1
	}
	defer pluginConn.Close()

	// 2. The registrar, as the DaemonSet's node-driver-registrar container runs it. Its HTTP endpoint
	// serves /healthz: a free loopback port picked here.
	httpAddr, err := freeLoopbackAddr()
	if err != nil {
		fail("free port for the registrar's /healthz", err)
		return 1
	}
	registrar, err = start("registrar", filepath.Join(logs, "registrar.log"), *registrarBin,
		"--csi-address="+pluginSock,
		"--kubelet-registration-path="+kubeletRegistrationPath,
		"--plugin-registration-path="+registryDir,
		"--http-endpoint="+httpAddr,
		"--v=5")
	if !check("registrar starts", err, "pid "+pidOf(registrar)) {
		return 1
	}

	// 3. Kubelet's plugin watcher: a socket appears in plugins_registry; dial it.
	took, err = waitForSocket(regSock, registrar)
	if !check("registration socket appears", err, fmt.Sprintf("%s after %s", filepath.Base(regSock), took)) {
		return 1
	}
	if entries, err := os.ReadDir(registryDir); err == nil && len(entries) != 1 {
		names := []string{}
		for _, e := range entries {
			names = append(names, e.Name())
		}
		fail("plugins_registry holds only that socket", fmt.Errorf("found %v", names))
	} else if err == nil {
		pass("plugins_registry holds only that socket", "")
	}
	regConn, err := dial(regSock)
	if err != nil {
		fail("registration connection", err)
		return 1
	}
	defer regConn.Close()
	reg := registerapi.NewRegistrationClient(regConn)

	// 4. GetInfo, and what kubelet's CSI handler validates of its answer.
	ctx, cancel := context.WithTimeout(context.Background(), *callTimeout)
	info, err := reg.GetInfo(ctx, &registerapi.InfoRequest{})
	cancel()
	if !check("Registration.GetInfo", err, "") {
		return 1
	}
	check("GetInfo type", expect("type", info.GetType(), registerapi.CSIPlugin), info.GetType())
	check("GetInfo name", expect("name", info.GetName(), driverName), info.GetName())
	check("GetInfo endpoint", expect("endpoint", info.GetEndpoint(), kubeletRegistrationPath), info.GetEndpoint())
	var versionErr error
	if !slices.Contains(info.GetSupportedVersions(), "1.0.0") {
		versionErr = fmt.Errorf("supported_versions %q lacks 1.0.0", info.GetSupportedVersions())
	}
	check("GetInfo supported_versions has 1.0.0", versionErr, fmt.Sprint(info.GetSupportedVersions()))

	// 5. Kubelet's CSI handler (RegisterPlugin) calls NodeGetInfo on the endpoint it was given, then
	// notifies the registrar. The endpoint is a host path; here the plugin's socket stands for it.
	ctx, cancel = context.WithTimeout(context.Background(), *callTimeout)
	nodeInfo, err := csi.NewNodeClient(pluginConn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	cancel()
	if err == nil {
		err = expect("node_id", nodeInfo.GetNodeId(), nodeID)
	}
	check("NodeGetInfo via the endpoint", err, fmt.Sprintf("node_id=%q max_volumes_per_node=%d",
		nodeInfo.GetNodeId(), nodeInfo.GetMaxVolumesPerNode()))

	ctx, cancel = context.WithTimeout(context.Background(), *callTimeout)
	_, err = reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true})
	cancel()
	check("NotifyRegistrationStatus(registered=true)", err, "OK")

	// 6. The registrar's health endpoint (what the DaemonSet's liveness probe asks).
	check("registrar /healthz", healthz(httpAddr), "200 from http://"+httpAddr+"/healthz")

	// Both still running after registration (a registrar that exits here makes kubelet deregister).
	if plugin.exited() || registrar.exited() {
		fail("both still running after registration", fmt.Errorf("plugin exited=%v registrar exited=%v",
			plugin.exited(), registrar.exited()))
		return 1
	}
	pass("both still running after registration", "")

	// 7. Shutdown: registrar first (it removes its registration socket, which is how kubelet learns the
	// plugin is gone), then the plugin (it removes its socket).
	regConn.Close()
	status, err := registrar.stop()
	check("registrar exits on SIGTERM", err, status)
	check("registration socket removed", absent(regSock), "")

	pluginConn.Close()
	status, err = plugin.stop()
	check("plugin exits on SIGTERM", err, status)
	check("plugin socket removed", absent(pluginSock), "")

	var left error
	if l := leftovers(); len(l) > 0 {
		left = fmt.Errorf("still running: %s", strings.Join(l, "; "))
	}
	check("nothing left running", left, "")
	return 0
}

func pidOf(p *proc) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(p.cmd.Process.Pid)
}

func expect(what, got, want string) error {
	if got != want {
		return fmt.Errorf("%s = %q, want %q", what, got, want)
	}
	return nil
}

func absent(path string) error {
	if exists(path) {
		return fmt.Errorf("%s is still there", path)
	}
	return nil
}

func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// healthz asks the registrar's /healthz; its HTTP server starts beside the registration server, so a
// refused connection is retried until the start deadline, but any answer other than 200 fails.
func healthz(addr string) error {
	client := http.Client{Timeout: *callTimeout}
	deadline := time.Now().Add(*startDeadline)
	var resp *http.Response
	var err error
	for {
		resp, err = client.Get("http://" + addr + "/healthz")
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // poll interval, bounded by the deadline above
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(bufio.NewReader(io.LimitReader(resp.Body, 4096)))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}
