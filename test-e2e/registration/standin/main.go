// Command standin is NOT node-driver-registrar. It is a minimal stand-in with the same command line and
// the same observable behaviour that the harness checks (GetPluginInfo on the CSI socket, the
// <driver>-reg.sock registration server, /healthz, socket removal on SIGTERM), written as a self-test of
// the harness: make test runs the real registrar (from ../shared/tools). A pass with it proves the harness
// and blocknode's part, not compatibility with the real registrar. run.sh uses it only when asked for
// explicitly (REGISTRAR=standin).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

var (
	csiAddress              = flag.String("csi-address", "/run/csi/socket", "the CSI driver's socket")
	pluginRegistrationPath  = flag.String("plugin-registration-path", "/registration", "kubelet's plugin registration directory")
	kubeletRegistrationPath = flag.String("kubelet-registration-path", "", "the CSI driver's socket on the host")
	httpEndpoint            = flag.String("http-endpoint", "", "host:port for /healthz (off when empty)")
	timeout                 = flag.Duration("timeout", time.Second, "timeout of the call to the driver")
	_                       = flag.Int("v", 0, "accepted for command-line compatibility; ignored")
)

type server struct {
	registerapi.UnimplementedRegistrationServer
	name string
}

func (s server) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	log.Printf("GetInfo")
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: s.name, Endpoint: *kubeletRegistrationPath,
		SupportedVersions: []string{"1.0.0"}}, nil
}

func (s server) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	log.Printf("NotifyRegistrationStatus registered=%v error=%q", st.PluginRegistered, st.Error)
	if !st.PluginRegistered {
		os.Exit(1)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

func main() {
	log.SetPrefix("standin-registrar: ")
	flag.Parse()
	if *kubeletRegistrationPath == "" {
		log.Fatal("--kubelet-registration-path is required")
	}
	conn, err := grpc.NewClient("unix://"+*csiAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	info, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	cancel()
	conn.Close()
	if err != nil {
		log.Fatalf("GetPluginInfo: %v", err)
	}
	name := info.GetName()
	log.Printf("driver name %q", name)

	sock := filepath.Join(*pluginRegistrationPath, name+"-reg.sock")
	if err := os.Remove(sock); err != nil && !os.IsNotExist(err) {
		log.Fatal(err)
	}
	lis, err := net.Listen("unix", sock)
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, server{name: name})

	if *httpEndpoint != "" {
		go func() {
			mux := http.NewServeMux()
			mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
				if fi, err := os.Stat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
					w.WriteHeader(http.StatusNotFound)
					fmt.Fprint(w, "registration socket does not exist")
					return
				}
				fmt.Fprint(w, "ok")
			})
			log.Fatal(http.ListenAndServe(*httpEndpoint, mux))
		}()
	}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		srv.Stop()
		_ = os.Remove(sock)
		os.Exit(0)
	}()
	log.Printf("serving %s", sock)
	if err := srv.Serve(lis); err != nil {
		log.Fatal(err)
	}
}
