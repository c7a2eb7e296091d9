// Command kubeletclient is figure g's CSI client (test-e2e/bench/README.md): grpc-go, the client kubelet
// uses, driven by the bench over stdin. Each input line is one batch of calls:
//
//	OP MODE N SOCKET [REQUEST...]
//
// OP is probe, info, stage, unstage, cycle (NodePublishVolume then NodeUnpublishVolume) or stats (one
// untimed NodePublishVolume, N NodeGetVolumeStats, one untimed NodeUnpublishVolume); each REQUEST is a
// CSI request in protobuf's binary encoding, base64 (standard, padded): stage and unstage take their
// request, cycle the publish and the unpublish request, stats the publish, the stats and the unpublish
// request. MODE is
//
//	per-op  a new connection for every call, dialed before it and closed after it, as kubelet's
//	        pkg/volume/csi/csi_client.go does (grpc.Dial with a unix dialer; Close deferred to the return)
//	kubelet per-op, plus the NodeGetCapabilities calls kubelet makes before each operation, each on a
//	        connection of its own (see capabilityCalls), and a check that the driver advertises
//	        SINGLE_NODE_MULTI_WRITER (kubelet then sends ReadWriteOnce as that mode, as the bench's requests do)
//	shared  one connection per socket for the life of this process, dialed at its first batch
//
// The answer is one line: "ok" and the N durations in nanoseconds (a cycle's covers both calls with their
// dials and closes, and in kubelet mode their capability calls), or "error" and why. Timing is the client's wall clock around each call or cycle; no
// request is built inside it.
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// callTimeout bounds one call, as kubelet's operation context does (its csiTimeout is longer: a stuck
// call here fails the bench instead).
const callTimeout = 30 * time.Second

func main() {
	c := &client{shared: map[string]*grpc.ClientConn{}}
	defer c.closeAll()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<16), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		nanos, err := c.batch(strings.Fields(line))
		if err != nil {
			fmt.Fprintf(out, "error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			out.WriteString("ok")
			for _, n := range nanos {
				out.WriteString(" ")
				out.WriteString(strconv.FormatInt(n, 10))
			}
			out.WriteString("\n")
		}
		if err := out.Flush(); err != nil {
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "kubeletclient:", err)
		os.Exit(1)
	}
}

type client struct {
	shared map[string]*grpc.ClientConn
}

// dial is kubelet's newGrpcConn: a non-blocking dial whose connection is made by the first call on it.
func dial(socket string) (*grpc.ClientConn, error) {
	//nolint:staticcheck // grpc.Dial (not NewClient) because it is what kubelet calls
	return grpc.Dial(socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, target string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", target)
		}))
}

// call runs f on a connection: a new one closed afterwards (per-op) or the socket's shared one.
func (c *client) call(mode, socket string, f func(grpc.ClientConnInterface) error) error {
	if mode == "shared" {
		conn, ok := c.shared[socket]
		if !ok {
			var err error
			if conn, err = dial(socket); err != nil {
				return err
			}
			c.shared[socket] = conn
		}
		return f(conn)
	}
	conn, err := dial(socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	return f(conn)
}

func (c *client) closeAll() {
	for _, conn := range c.shared {
		conn.Close()
	}
}

func (c *client) batch(f []string) ([]int64, error) {
	if len(f) < 4 {
		return nil, errors.New("expected OP MODE N SOCKET [REQUEST...]")
	}
	op, mode, socket := f[0], f[1], f[3]
	if mode != "per-op" && mode != "shared" && mode != "kubelet" {
		return nil, fmt.Errorf("unknown mode %q", mode)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil || n < 1 {
		return nil, fmt.Errorf("bad count %q", f[2])
	}
	calls, err := operation(op, f[4:])
	if err != nil {
		return nil, err
	}
	if calls.before != nil {
		if err := c.run(mode, socket, calls.before); err != nil {
			return nil, fmt.Errorf("%s: before: %w", op, err)
		}
	}
	nanos := make([]int64, 0, n)
	var failed error
	for i := 0; i < n && failed == nil; i++ {
		start := time.Now()
		for _, step := range calls.timed {
			if failed = c.run(mode, socket, step); failed != nil {
				break
			}
		}
		nanos = append(nanos, time.Since(start).Nanoseconds())
	}
	if calls.after != nil {
		if err := c.run(mode, socket, calls.after); err != nil && failed == nil {
			failed = fmt.Errorf("after: %w", err)
		}
	}
	if failed != nil {
		return nil, fmt.Errorf("%s: %w", op, failed)
	}
	return nanos, nil
}

// run makes one call; in kubelet mode the NodeGetCapabilities calls kubelet makes before it come first, each
// on a connection of its own.
func (c *client) run(mode, socket string, s *step) error {
	if mode == "kubelet" {
		for _, capability := range s.asks {
			if err := c.call(mode, socket, asking(capability)); err != nil {
				return fmt.Errorf("NodeGetCapabilities before it: %w", err)
			}
		}
	}
	return c.call(mode, socket, s.call)
}

// step is one call, and the node capabilities kubelet asks about (one NodeGetCapabilities each) before it.
type step struct {
	call func(grpc.ClientConnInterface) error
	asks []csi.NodeServiceCapability_RPC_Type
}

// calls is one batch's work: the timed steps of one iteration, and untimed steps around the batch.
type calls struct {
	before, after *step
	timed         []*step
}

const (
	stageUnstage     = csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME
	volumeMountGroup = csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP
	multiWriter      = csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER
	volumeStats      = csi.NodeServiceCapability_RPC_GET_VOLUME_STATS
)

// What kubelet v1.37's pkg/volume/csi asks before each call (test-e2e/bench/README.md cites the lines): each
// NodeSupports* of csi_client.go is a NodeGetCapabilities on a new connection (nodeSupportsCapability ->
// nodeGetCapabilities -> nodeV1ClientCreator), and NodeStageVolume and NodePublishVolume ask for
// SINGLE_NODE_MULTI_WRITER themselves (getNodeV1AccessModeMapper) before they dial for the call.
var (
	// csi_attacher.go MountDevice: NodeSupportsStageUnstage, NodeSupportsVolumeMountGroup; then the mapper.
	asksBeforeFilesystemStage = []csi.NodeServiceCapability_RPC_Type{stageUnstage, volumeMountGroup, multiWriter}
	// csi_block.go SetUpDevice: NodeSupportsStageUnstage; then the mapper.
	asksBeforeBlockStage = []csi.NodeServiceCapability_RPC_Type{stageUnstage, multiWriter}
	// csi_mounter.go SetUpAt: NodeSupportsStageUnstage, NodeSupportsVolumeMountGroup; then the mapper.
	asksBeforeFilesystemPublish = []csi.NodeServiceCapability_RPC_Type{stageUnstage, volumeMountGroup, multiWriter}
	// csi_block.go MapPodDevice -> publishVolumeForBlock: the mapper only.
	asksBeforeBlockPublish = []csi.NodeServiceCapability_RPC_Type{multiWriter}
	// csi_attacher.go UnmountDevice and csi_block.go TearDownDevice: NodeSupportsStageUnstage.
	asksBeforeUnstage = []csi.NodeServiceCapability_RPC_Type{stageUnstage}
	// csi_metrics.go GetMetrics: NodeSupportsVolumeStats (VOLUME_CONDITION too only with the alpha
	// CSIVolumeHealth gate, off by default).
	asksBeforeStats = []csi.NodeServiceCapability_RPC_Type{volumeStats}
)

// asking is one NodeGetCapabilities as kubelet's nodeSupportsCapability makes it. For SINGLE_NODE_MULTI_WRITER
// the driver must have it: kubelet then sends ReadWriteOnce as SINGLE_NODE_MULTI_WRITER, which is what the
// bench's requests say (without it kubelet would send SINGLE_NODE_WRITER, and the figure would not be
// kubelet's).
func asking(capability csi.NodeServiceCapability_RPC_Type) func(grpc.ClientConnInterface) error {
	return func(conn grpc.ClientConnInterface) error {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		resp, err := csi.NewNodeClient(conn).NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
		if err != nil || capability != multiWriter {
			return err
		}
		for _, c := range resp.GetCapabilities() {
			if c.GetRpc().GetType() == multiWriter {
				return nil
			}
		}
		return errors.New("the driver lacks SINGLE_NODE_MULTI_WRITER: kubelet would send SINGLE_NODE_WRITER")
	}
}

func operation(op string, requests []string) (calls, error) {
	decoded := make([][]byte, len(requests))
	for i, r := range requests {
		b, err := base64.StdEncoding.DecodeString(r)
		if err != nil {
			return calls{}, fmt.Errorf("request %d: %w", i+1, err)
		}
		decoded[i] = b
	}
	want := map[string]int{"probe": 0, "info": 0, "stage": 1, "unstage": 1, "cycle": 2, "stats": 3}
	count, ok := want[op]
	if !ok {
		return calls{}, fmt.Errorf("unknown op %q", op)
	}
	if len(decoded) != count {
		return calls{}, fmt.Errorf("%s takes %d requests, got %d", op, count, len(decoded))
	}
	switch op {
	case "probe":
		return calls{timed: []*step{{call: probe}}}, nil
	case "info":
		return calls{timed: []*step{{call: info}}}, nil
	case "stage":
		s, err := stage(decoded[0])
		return calls{timed: []*step{s}}, err
	case "unstage":
		s, err := unstage(decoded[0])
		return calls{timed: []*step{s}}, err
	case "cycle":
		p, err := publish(decoded[0])
		if err != nil {
			return calls{}, err
		}
		u, err := unpublish(decoded[1])
		return calls{timed: []*step{p, u}}, err
	default:
		p, err := publish(decoded[0])
		if err != nil {
			return calls{}, err
		}
		s, err := stats(decoded[1])
		if err != nil {
			return calls{}, err
		}
		u, err := unpublish(decoded[2])
		return calls{before: p, timed: []*step{s}, after: u}, err
	}
}

func probe(conn grpc.ClientConnInterface) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	_, err := csi.NewIdentityClient(conn).Probe(ctx, &csi.ProbeRequest{})
	return err
}

func info(conn grpc.ClientConnInterface) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	_, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	return err
}

func stage(b []byte) (*step, error) {
	req := &csi.NodeStageVolumeRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, fmt.Errorf("NodeStageVolumeRequest: %w", err)
	}
	asks := asksBeforeFilesystemStage
	if req.GetVolumeCapability().GetBlock() != nil {
		asks = asksBeforeBlockStage
	}
	return &step{asks: asks, call: func(conn grpc.ClientConnInterface) error {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		_, err := csi.NewNodeClient(conn).NodeStageVolume(ctx, req)
		return err
	}}, nil
}

func unstage(b []byte) (*step, error) {
	req := &csi.NodeUnstageVolumeRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, fmt.Errorf("NodeUnstageVolumeRequest: %w", err)
	}
	return &step{asks: asksBeforeUnstage, call: func(conn grpc.ClientConnInterface) error {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		_, err := csi.NewNodeClient(conn).NodeUnstageVolume(ctx, req)
		return err
	}}, nil
}

func publish(b []byte) (*step, error) {
	req := &csi.NodePublishVolumeRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, fmt.Errorf("NodePublishVolumeRequest: %w", err)
	}
	asks := asksBeforeFilesystemPublish
	if req.GetVolumeCapability().GetBlock() != nil {
		asks = asksBeforeBlockPublish
	}
	return &step{asks: asks, call: func(conn grpc.ClientConnInterface) error {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		_, err := csi.NewNodeClient(conn).NodePublishVolume(ctx, req)
		return err
	}}, nil
}

func unpublish(b []byte) (*step, error) {
	req := &csi.NodeUnpublishVolumeRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, fmt.Errorf("NodeUnpublishVolumeRequest: %w", err)
	}
	// csi_mounter.go TearDownAt and csi_block.go UnmapPodDevice ask nothing first.
	return &step{call: func(conn grpc.ClientConnInterface) error {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		_, err := csi.NewNodeClient(conn).NodeUnpublishVolume(ctx, req)
		return err
	}}, nil
}

func stats(b []byte) (*step, error) {
	req := &csi.NodeGetVolumeStatsRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, fmt.Errorf("NodeGetVolumeStatsRequest: %w", err)
	}
	return &step{asks: asksBeforeStats, call: func(conn grpc.ClientConnInterface) error {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		_, err := csi.NewNodeClient(conn).NodeGetVolumeStats(ctx, req)
		return err
	}}, nil
}
