// gobrick-attach: figure i's peer (test-e2e/bench/README.md, "Figure i"). Drives Dell's gobrick iSCSI
// connector, the node-side library of Dell's CSI drivers (PowerStore, PowerMax, Unity, PowerFlex...), over N
// volumes at once: one goroutine per volume, as kubelet has one NodeStageVolume per volume in flight.
//
//	gobrick-attach connect    -target IQN -portals P1,P2 -volumes LUN:WWID,LUN:WWID,...
//	gobrick-attach disconnect -target IQN -portals P1,P2 -volumes LUN:WWID:DEVICE,...
//
// connect calls ISCSIConnector.ConnectVolume for every volume at once and checks that each returned device
// is the multipath map of the expected LUN (its WWN, and the map's dm uuid); disconnect calls
// DisconnectVolumeByDeviceName for every volume at once (what Dell's drivers call in NodeUnstageVolume) and
// checks that the map and its paths are gone. The connector is configured as Dell's drivers configure it:
// ISCSIConnectorParams with nothing but a chroot (here none: the harness runs on the node itself), so
// gobrick's defaults hold, among them at most 5 operations in flight (MaxParallelOperations); -max-parallel
// sets another.
//
// One line per volume on stdout, then one for the whole burst, for san-bench.sh to aggregate:
//
//	GOBRICK op=connect lun=3 ms=2345 device=dm-2 wwn=36000...
//	GOBRICK op=connect lun=4 ms=2400 error="..."
//	GOBRICK op=connect n=4 failed=0 all_ms=2600 maxrss_kib=9000
//
// gobrick's own log goes to stderr. Exit status 1 when any volume failed or a check did not hold.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dell/gobrick"
)

// volume is one LUN of the target: what is connected, what it must turn out to be, and (to disconnect) the
// device connect returned.
type volume struct {
	lun    int
	wwid   string
	device string
}

// result is one volume's operation, as printed.
type result struct {
	vol    volume
	ms     int64
	device string
	wwn    string
	err    error
}

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "connect" && os.Args[1] != "disconnect") {
		fmt.Fprintln(os.Stderr, "usage: gobrick-attach connect|disconnect -target IQN -portals P1,P2 -volumes LUN:WWID[:DEVICE],...")
		os.Exit(2)
	}
	op := os.Args[1]
	flags := flag.NewFlagSet(op, flag.ExitOnError)
	target := flags.String("target", "", "the target's IQN")
	portals := flags.String("portals", "", "the target's portals, ADDRESS:PORT, comma-separated")
	volumes := flags.String("volumes", "", "LUN:WWID (connect) or LUN:WWID:DEVICE (disconnect), comma-separated")
	maxParallel := flags.Int("max-parallel", 0, "gobrick's MaxParallelOperations; 0: its default (5), as Dell's drivers run it")
	timeout := flags.Duration("timeout", 10*time.Minute, "bound on the whole burst")
	debug := flags.Bool("debug", false, "gobrick's debug lines too")
	_ = flags.Parse(os.Args[2:])

	vols, err := parseVolumes(*volumes, op == "disconnect")
	if err != nil || *target == "" || *portals == "" {
		log.Fatalf("gobrick-attach: %v (target %q, portals %q)", err, *target, *portals)
	}
	var targets []gobrick.ISCSITargetInfo
	for _, p := range strings.Split(*portals, ",") {
		targets = append(targets, gobrick.ISCSITargetInfo{Portal: p, Target: *target})
	}

	gobrick.SetLogger(&stderrLogger{debug: *debug, out: log.New(os.Stderr, "", log.Ltime|log.Lmicroseconds)})
	// gobrick's default tracer prints every function's entry and exit on stdout; Dell's drivers replace it with
	// one of their own (silent unless tracing is enabled), and so does this harness: stdout carries the results.
	gobrick.SetTracer(silentTracer{})
	connector := gobrick.NewISCSIConnector(gobrick.ISCSIConnectorParams{MaxParallelOperations: *maxParallel})

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	results := make([]result, len(vols))
	var wg sync.WaitGroup
	start := time.Now()
	for i, v := range vols {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each volume gets its own copy of the targets: ConnectVolume rewrites the portals it is given.
			info := gobrick.ISCSIVolumeInfo{Targets: append([]gobrick.ISCSITargetInfo(nil), targets...), Lun: v.lun}
			t0 := time.Now()
			r := result{vol: v}
			if op == "connect" {
				var dev gobrick.Device
				dev, r.err = connector.ConnectVolume(ctx, info)
				r.ms = time.Since(t0).Milliseconds()
				r.device, r.wwn = dev.Name, dev.WWN
				if r.err == nil {
					r.err = checkConnected(v, dev)
				}
			} else {
				r.err = connector.DisconnectVolumeByDeviceName(ctx, v.device)
				r.ms = time.Since(t0).Milliseconds()
				if r.err == nil {
					r.err = checkDisconnected(v)
				}
			}
			results[i] = r
		}()
	}
	wg.Wait()
	all := time.Since(start).Milliseconds()

	failed := 0
	for _, r := range results {
		line := fmt.Sprintf("GOBRICK op=%s lun=%d ms=%d", op, r.vol.lun, r.ms)
		if r.device != "" {
			line += fmt.Sprintf(" device=%s wwn=%s", r.device, r.wwn)
		}
		if r.err != nil {
			failed++
			line += fmt.Sprintf(" error=%q", r.err.Error())
		}
		fmt.Println(line)
	}
	fmt.Printf("GOBRICK op=%s n=%d failed=%d all_ms=%d maxrss_kib=%d\n", op, len(vols), failed, all, maxRSSKiB())
	if failed > 0 {
		os.Exit(1)
	}
}

// parseVolumes reads "LUN:WWID[:DEVICE],...".
func parseVolumes(list string, withDevice bool) ([]volume, error) {
	var vols []volume
	for _, item := range strings.Split(list, ",") {
		parts := strings.Split(item, ":")
		if len(parts) != 2 && len(parts) != 3 {
			return nil, fmt.Errorf("volume %q is not LUN:WWID[:DEVICE]", item)
		}
		lun, err := strconv.Atoi(parts[0])
		if err != nil || lun < 0 {
			return nil, fmt.Errorf("volume %q: LUN %q is not a number", item, parts[0])
		}
		v := volume{lun: lun, wwid: parts[1]}
		if len(parts) == 3 {
			v.device = parts[2]
		}
		if withDevice && !strings.HasPrefix(v.device, "dm-") {
			return nil, fmt.Errorf("volume %q: no dm-N device to disconnect", item)
		}
		vols = append(vols, v)
	}
	if len(vols) == 0 {
		return nil, errors.New("no volumes")
	}
	return vols, nil
}

// checkConnected: the device gobrick returned is the multipath map of the expected LUN. gobrick reads the WWN
// from a path's sysfs wwid; the map's own uuid (mpath-WWID, set by multipathd) is checked too, so a map built
// over the wrong disks would not pass.
func checkConnected(v volume, dev gobrick.Device) error {
	if dev.WWN != v.wwid {
		return fmt.Errorf("LUN %d: gobrick returned WWN %s, expected %s", v.lun, dev.WWN, v.wwid)
	}
	if !strings.HasPrefix(dev.Name, "dm-") {
		return fmt.Errorf("LUN %d: gobrick returned %s, not a multipath map", v.lun, dev.Name)
	}
	uuid, err := os.ReadFile(filepath.Join("/sys/block", dev.Name, "dm/uuid"))
	if err != nil {
		return fmt.Errorf("LUN %d: %s: %v", v.lun, dev.Name, err)
	}
	if got := strings.TrimSpace(string(uuid)); got != "mpath-"+v.wwid {
		return fmt.Errorf("LUN %d: %s is %q, expected mpath-%s", v.lun, dev.Name, got, v.wwid)
	}
	return nil
}

// checkDisconnected: no map of the LUN's WWID and no SCSI disk of it is left (sessions are another matter:
// gobrick keeps them, and san-bench.sh counts what it leaves).
func checkDisconnected(v volume) error {
	maps, _ := filepath.Glob("/sys/block/dm-*/dm/uuid")
	for _, m := range maps {
		if data, err := os.ReadFile(m); err == nil && strings.TrimSpace(string(data)) == "mpath-"+v.wwid {
			return fmt.Errorf("LUN %d: the map %s is still there", v.lun, strings.Split(m, "/")[3])
		}
	}
	disks, _ := filepath.Glob("/sys/block/sd*/device/wwid")
	for _, d := range disks {
		data, err := os.ReadFile(d)
		if err == nil && "3"+strings.TrimPrefix(strings.TrimSpace(string(data)), "naa.") == v.wwid {
			return fmt.Errorf("LUN %d: the disk %s is still there", v.lun, strings.Split(d, "/")[3])
		}
	}
	return nil
}

func maxRSSKiB() int64 {
	var usage syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &usage) != nil {
		return 0
	}
	return usage.Maxrss
}

// stderrLogger: gobrick's Info and Error lines (Debug with -debug), stamped, on stderr.
type stderrLogger struct {
	debug bool
	out   *log.Logger
}

func (l *stderrLogger) Info(_ context.Context, format string, args ...interface{}) {
	l.out.Printf("INFO "+format, args...)
}

func (l *stderrLogger) Debug(_ context.Context, format string, args ...interface{}) {
	if l.debug {
		l.out.Printf("DEBUG "+format, args...)
	}
}

func (l *stderrLogger) Error(_ context.Context, format string, args ...interface{}) {
	l.out.Printf("ERROR "+format, args...)
}

// silentTracer drops gobrick's trace lines.
type silentTracer struct{}

func (silentTracer) Trace(context.Context, string, ...interface{}) {}
