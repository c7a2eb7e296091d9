package main

import (
	"context"
	"encoding/base64"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// fakeDriver counts calls and the connections they came on.
type fakeDriver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedNodeServer
	probes, publishes, unpublishes, stats, capabilities atomic.Int32
	published                                           atomic.Bool
	// noMultiWriter: the driver does not advertise SINGLE_NODE_MULTI_WRITER
	noMultiWriter bool
}

func (d *fakeDriver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	d.capabilities.Add(1)
	types := []csi.NodeServiceCapability_RPC_Type{stageUnstage, volumeStats}
	if !d.noMultiWriter {
		types = append(types, multiWriter)
	}
	resp := &csi.NodeGetCapabilitiesResponse{}
	for _, t := range types {
		resp.Capabilities = append(resp.Capabilities, &csi.NodeServiceCapability{
			Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}}})
	}
	return resp, nil
}

func (d *fakeDriver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	d.probes.Add(1)
	return &csi.ProbeResponse{}, nil
}

func (d *fakeDriver) NodePublishVolume(_ context.Context, r *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	if r.GetTargetPath() != "/t" {
		return nil, errBadRequest
	}
	d.publishes.Add(1)
	d.published.Store(true)
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *fakeDriver) NodeUnpublishVolume(context.Context, *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	d.unpublishes.Add(1)
	d.published.Store(false)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

func (d *fakeDriver) NodeGetVolumeStats(context.Context, *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	if !d.published.Load() {
		return nil, errBadRequest
	}
	d.stats.Add(1)
	return &csi.NodeGetVolumeStatsResponse{}, nil
}

var errBadRequest = context.Canceled

// countingListener counts the connections the server accepted.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

func serve(t *testing.T) (string, *fakeDriver, *countingListener) {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "csi.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: l}
	d := &fakeDriver{}
	s := grpc.NewServer()
	csi.RegisterIdentityServer(s, d)
	csi.RegisterNodeServer(s, d)
	go s.Serve(cl)
	t.Cleanup(s.Stop)
	return socket, d, cl
}

func encode(t *testing.T, m proto.Message) string {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func TestPerOpDialsForEveryCallAndSharedOnce(t *testing.T) {
	socket, d, l := serve(t)
	c := &client{shared: map[string]*grpc.ClientConn{}}
	defer c.closeAll()
	pub := encode(t, &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/t"})
	unpub := encode(t, &csi.NodeUnpublishVolumeRequest{VolumeId: "v", TargetPath: "/t"})

	nanos, err := c.batch([]string{"cycle", "per-op", "3", socket, pub, unpub})
	if err != nil || len(nanos) != 3 {
		t.Fatalf("per-op cycles: %v, %v", nanos, err)
	}
	if got := l.accepted.Load(); got != 6 {
		t.Fatalf("per-op: %d connections for 3 cycles, want 6 (one per call)", got)
	}
	if _, err := c.batch([]string{"cycle", "shared", "3", socket, pub, unpub}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.batch([]string{"probe", "shared", "5", socket}); err != nil {
		t.Fatal(err)
	}
	if got := l.accepted.Load(); got != 7 {
		t.Fatalf("shared: %d connections in all, want 7 (one more for every shared call)", got)
	}
	if d.publishes.Load() != 6 || d.unpublishes.Load() != 6 || d.probes.Load() != 5 {
		t.Fatalf("calls: %d publishes, %d unpublishes, %d probes", d.publishes.Load(), d.unpublishes.Load(), d.probes.Load())
	}
}

func TestStatsArePublishedAroundAndErrorsAreReported(t *testing.T) {
	socket, d, _ := serve(t)
	c := &client{shared: map[string]*grpc.ClientConn{}}
	defer c.closeAll()
	pub := encode(t, &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/t"})
	st := encode(t, &csi.NodeGetVolumeStatsRequest{VolumeId: "v", VolumePath: "/t"})
	unpub := encode(t, &csi.NodeUnpublishVolumeRequest{VolumeId: "v", TargetPath: "/t"})
	nanos, err := c.batch([]string{"stats", "per-op", "4", socket, pub, st, unpub})
	if err != nil || len(nanos) != 4 || d.stats.Load() != 4 || d.published.Load() {
		t.Fatalf("stats: %v, %v; %d stats calls, still published %v", nanos, err, d.stats.Load(), d.published.Load())
	}
	bad := encode(t, &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/elsewhere"})
	if _, err := c.batch([]string{"cycle", "per-op", "1", socket, bad, unpub}); err == nil {
		t.Fatal("a failed publish was not reported")
	}
	for _, f := range [][]string{{"cycle", "per-op", "1", socket, pub}, {"probe", "sometimes", "1", socket},
		{"probe", "per-op", "0", socket}, {"dance", "per-op", "1", socket}} {
		if _, err := c.batch(f); err == nil {
			t.Fatalf("%v was accepted", f)
		}
	}
}

func TestKubeletModeAsksCapabilitiesOnConnectionsOfTheirOwn(t *testing.T) {
	socket, d, l := serve(t)
	c := &client{shared: map[string]*grpc.ClientConn{}}
	defer c.closeAll()
	mount := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}}}
	block := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}}
	fsPub := encode(t, &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/t", VolumeCapability: mount})
	blockPub := encode(t, &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/t", VolumeCapability: block})
	unpub := encode(t, &csi.NodeUnpublishVolumeRequest{VolumeId: "v", TargetPath: "/t"})
	st := encode(t, &csi.NodeGetVolumeStatsRequest{VolumeId: "v", VolumePath: "/t"})

	// A filesystem cycle: three asks before the publish, none before the unpublish.
	if _, err := c.batch([]string{"cycle", "kubelet", "2", socket, fsPub, unpub}); err != nil {
		t.Fatal(err)
	}
	if got, asks := l.accepted.Load(), d.capabilities.Load(); got != 10 || asks != 6 {
		t.Fatalf("filesystem cycles: %d connections, %d NodeGetCapabilities; want 10 and 6", got, asks)
	}
	// A raw block cycle: one ask before the publish.
	if _, err := c.batch([]string{"cycle", "kubelet", "1", socket, blockPub, unpub}); err != nil {
		t.Fatal(err)
	}
	if got, asks := l.accepted.Load(), d.capabilities.Load(); got != 13 || asks != 7 {
		t.Fatalf("raw block cycle: %d connections, %d NodeGetCapabilities in all; want 13 and 7", got, asks)
	}
	// Stats: one ask before each (and the publish around them asks its three).
	if _, err := c.batch([]string{"stats", "kubelet", "2", socket, fsPub, st, unpub}); err != nil {
		t.Fatal(err)
	}
	if got, asks := l.accepted.Load(), d.capabilities.Load(); got != 22 || asks != 12 {
		t.Fatalf("stats: %d connections, %d NodeGetCapabilities in all; want 22 and 12", got, asks)
	}
}

func TestKubeletModeWantsSingleNodeMultiWriter(t *testing.T) {
	socket, d, _ := serve(t)
	d.noMultiWriter = true
	c := &client{shared: map[string]*grpc.ClientConn{}}
	defer c.closeAll()
	pub := encode(t, &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/t"})
	unpub := encode(t, &csi.NodeUnpublishVolumeRequest{VolumeId: "v", TargetPath: "/t"})
	if _, err := c.batch([]string{"cycle", "kubelet", "1", socket, pub, unpub}); err == nil {
		t.Fatal("a driver without SINGLE_NODE_MULTI_WRITER was published to in kubelet's shape")
	}
	if d.publishes.Load() != 0 {
		t.Fatal("published although the access mode would not be kubelet's")
	}
}
