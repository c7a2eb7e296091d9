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
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"blocknode/test-e2e/harness"
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
	registrarWait = flag.Duration("registrar-timeout", time.Second, "the registrar's --timeout (the DaemonSet's)")
	workDir       = flag.String("work", "", "an empty, short directory for sockets, state and logs")
	startDeadline = flag.Duration("start-deadline", 60*time.Second, "how long a process may take to listen")
	stopDeadline  = flag.Duration("stop-deadline", 60*time.Second, "how long a process may take to exit after SIGTERM")
	callTimeout   = flag.Duration("call-timeout", 10*time.Second, "timeout of each gRPC/HTTP call")
)

// ---------------------------------------------------------------------------------------------- sockets and files

func dial(socket string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
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

var checks harness.Checks

func run() (code int) {
	children := &harness.Runner{Dir: *workDir, StopDeadline: *stopDeadline}
	pluginDir := filepath.Join(*workDir, "plugin")
	registryDir := filepath.Join(*workDir, "plugins_registry")
	logs := filepath.Join(*workDir, "logs")
	pluginSock := filepath.Join(pluginDir, "csi.sock")
	blocknode := harness.Plugin{Java: *javaBin, Jar: *pluginJar, Socket: pluginSock, NodeID: nodeID, WorkDir: *workDir}
	for _, dir := range append([]string{pluginDir, registryDir, logs}, blocknode.Dirs()...) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
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

	var plugin, registrar *harness.Process
	defer func() {
		// On any early return: kill what still runs, show the logs, and report.
		registrar.Kill()
		plugin.Kill()
		if checks.Failed > 0 {
			harness.PrintLogTails(plugin, registrar)
		}
		if !probeFileBefore && exists(probeFile) {
			_ = os.Remove(probeFile)
		}
		code = checks.Finish("registration", code)
	}()

	// 1. The plugin, as the DaemonSet's blocknode container runs it.
	var err error
	plugin, err = children.Start("plugin", filepath.Join(logs, "plugin.log"), nil, blocknode.Argv()...)
	if !checks.Check("plugin starts", err, "pid "+strconv.Itoa(plugin.Pid())) {
		return 1
	}
	took, err := harness.WaitForSocket(pluginSock, plugin, *startDeadline)
	if !checks.Check("plugin socket answers", err, fmt.Sprintf("%s after %s", pluginSock, took)) {
		return 1
	}
	pluginConn, err := dial(pluginSock)
	if err != nil {
		checks.Fail("plugin connection", err)
		return 1
	}
	defer pluginConn.Close()

	// 2. The registrar, as the DaemonSet's node-driver-registrar container runs it. Its HTTP endpoint
	// serves /healthz: a free loopback port picked here.
	httpAddr, err := harness.FreeLoopbackAddr()
	if err != nil {
		checks.Fail("free port for the registrar's /healthz", err)
		return 1
	}
	registrar, err = children.Start("registrar", filepath.Join(logs, "registrar.log"), nil, *registrarBin,
		"--csi-address="+pluginSock,
		"--kubelet-registration-path="+kubeletRegistrationPath,
		"--plugin-registration-path="+registryDir,
		"--http-endpoint="+httpAddr,
		"--timeout="+registrarWait.String(),
		"--v=5")
	if !checks.Check("registrar starts", err, fmt.Sprintf("pid %d, --timeout=%s", registrar.Pid(), *registrarWait)) {
		return 1
	}

	// 3. Kubelet's plugin watcher: a socket appears in plugins_registry; dial it.
	took, err = harness.WaitForSocket(regSock, registrar, *startDeadline)
	if !checks.Check("registration socket appears", err, fmt.Sprintf("%s after %s", filepath.Base(regSock), took)) {
		return 1
	}
	if entries, err := os.ReadDir(registryDir); err == nil && len(entries) != 1 {
		names := []string{}
		for _, e := range entries {
			names = append(names, e.Name())
		}
		checks.Fail("plugins_registry holds only that socket", fmt.Errorf("found %v", names))
	} else if err == nil {
		checks.Pass("plugins_registry holds only that socket", "")
	}
	regConn, err := dial(regSock)
	if err != nil {
		checks.Fail("registration connection", err)
		return 1
	}
	defer regConn.Close()
	reg := registerapi.NewRegistrationClient(regConn)

	// 4. GetInfo, and what kubelet's CSI handler validates of its answer.
	ctx, cancel := context.WithTimeout(context.Background(), *callTimeout)
	info, err := reg.GetInfo(ctx, &registerapi.InfoRequest{})
	cancel()
	if !checks.Check("Registration.GetInfo", err, "") {
		return 1
	}
	checks.Check("GetInfo type", expect("type", info.GetType(), registerapi.CSIPlugin), info.GetType())
	checks.Check("GetInfo name", expect("name", info.GetName(), driverName), info.GetName())
	checks.Check("GetInfo endpoint", expect("endpoint", info.GetEndpoint(), kubeletRegistrationPath), info.GetEndpoint())
	var versionErr error
	if !slices.Contains(info.GetSupportedVersions(), "1.0.0") {
		versionErr = fmt.Errorf("supported_versions %q lacks 1.0.0", info.GetSupportedVersions())
	}
	checks.Check("GetInfo supported_versions has 1.0.0", versionErr, fmt.Sprint(info.GetSupportedVersions()))

	// 5. Kubelet's CSI handler (RegisterPlugin) calls NodeGetInfo on the endpoint it was given, then
	// notifies the registrar. The endpoint is a host path; here the plugin's socket stands for it.
	ctx, cancel = context.WithTimeout(context.Background(), *callTimeout)
	nodeInfo, err := csi.NewNodeClient(pluginConn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	cancel()
	if err == nil {
		err = expect("node_id", nodeInfo.GetNodeId(), nodeID)
	}
	checks.Check("NodeGetInfo via the endpoint", err, fmt.Sprintf("node_id=%q max_volumes_per_node=%d",
		nodeInfo.GetNodeId(), nodeInfo.GetMaxVolumesPerNode()))

	ctx, cancel = context.WithTimeout(context.Background(), *callTimeout)
	_, err = reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true})
	cancel()
	checks.Check("NotifyRegistrationStatus(registered=true)", err, "OK")

	// 6. The registrar's health endpoint (what the DaemonSet's liveness probe asks).
	checks.Check("registrar /healthz", healthz(httpAddr), "200 from http://"+httpAddr+"/healthz")

	// Both still running after registration (a registrar that exits here makes kubelet deregister).
	if plugin.Exited() || registrar.Exited() {
		checks.Fail("both still running after registration", fmt.Errorf("plugin exited=%v registrar exited=%v",
			plugin.Exited(), registrar.Exited()))
		return 1
	}
	checks.Pass("both still running after registration", "")

	// 7. Shutdown: registrar first (it removes its registration socket, which is how kubelet learns the
	// plugin is gone), then the plugin (it removes its socket).
	regConn.Close()
	status, err := registrar.Stop()
	checks.Check("registrar exits on SIGTERM", err, status)
	checks.Check("registration socket removed", absent(regSock), "")

	pluginConn.Close()
	status, err = plugin.Stop()
	checks.Check("plugin exits on SIGTERM", err, status)
	checks.Check("plugin socket removed", absent(pluginSock), "")

	checks.Check("nothing left running", children.NothingLeft(), "")
	return 0
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
