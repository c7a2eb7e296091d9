package harness

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitError is what Wait returns for a shell that runs script.
func waitError(script string) error {
	return exec.Command("sh", "-c", script).Run()
}

func TestEndAfterSIGTERM(t *testing.T) {
	for _, c := range []struct {
		what           string
		script         string
		sigtermMayKill bool
		clean          bool
	}{
		{"exit 0", "exit 0", false, true},
		{"the JVM's 143", "exit 143", false, true},
		{"another exit code", "exit 1", true, false},
		{"death by SIGTERM, allowed", "kill -TERM $$", true, true},
		{"death by SIGTERM, not allowed", "kill -TERM $$", false, false},
		{"death by another signal", "kill -KILL $$", true, false},
	} {
		status, err := endAfterSIGTERM("child", waitError(c.script), c.sigtermMayKill)
		if c.clean && (err != nil || status == "") {
			t.Errorf("%s: got %q, %v; want a clean end", c.what, status, err)
		}
		if !c.clean && (err == nil || !strings.HasPrefix(err.Error(), "child ended with ")) {
			t.Errorf("%s: got %q, %v; want an error naming the child", c.what, status, err)
		}
	}
}

func TestStopSendsSIGTERMAndRecordsThePid(t *testing.T) {
	r := &Runner{Dir: t.TempDir(), StopDeadline: 10 * time.Second, SIGTERMMayKill: true}
	p, err := r.Start("sleeper", filepath.Join(r.Dir, "sleeper.log"), nil, "sleep", "30")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	pids, _ := os.ReadFile(filepath.Join(r.Dir, PidsFile))
	if string(pids) != strconv.Itoa(p.Pid())+"\n" {
		t.Errorf("pids file %q, want the child's pid %d", pids, p.Pid())
	}
	if status, err := p.Stop(); err != nil || !strings.HasPrefix(status, "signal: terminated in ") {
		t.Errorf("Stop: %q, %v", status, err)
	}
	if _, err := p.Stop(); err == nil {
		t.Error("a second Stop should say the process had already exited")
	}
}

func TestKillTakesTheProcessGroupAndLeavesNothing(t *testing.T) {
	r := &Runner{Dir: t.TempDir()}
	// The shell names the directory ($0) and has a child of its own: both must go.
	p, err := r.Start("shell", filepath.Join(r.Dir, "shell.log"), nil, "sh", "-c", "sleep 30 && sleep 30", r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// The shell first (the lowest pid); its child may be named too, for the moment between its fork and its exec
	// of sleep, when it is still a shell with the same command line.
	if err := r.NothingLeft(); err == nil || !strings.HasPrefix(err.Error(), "still running: "+strconv.Itoa(p.Pid())+" sh -c") {
		t.Errorf("NothingLeft before Kill: %v, want the shell", err)
	}
	p.Kill()
	if !p.Exited() || p.Err() == nil {
		t.Errorf("after Kill: exited %v, err %v", p.Exited(), p.Err())
	}
	if err := r.NothingLeft(); err != nil {
		t.Errorf("NothingLeft after Kill: %v", err)
	}
	var never *Process
	never.Kill() // a process that never started: nothing to do
	if never.Pid() != 0 {
		t.Error("Pid of a process that never started should be 0")
	}
}

func TestLogsAppendedOrTruncated(t *testing.T) {
	for _, appendLogs := range []bool{true, false} {
		r := &Runner{Dir: t.TempDir(), AppendLogs: appendLogs}
		log := filepath.Join(r.Dir, "echo.log")
		for _, word := range []string{"first", "second"} {
			p, err := r.Start("echo", log, nil, "echo", word)
			if err != nil {
				t.Fatal(err)
			}
			<-p.done
		}
		got, _ := os.ReadFile(log)
		want := "second\n"
		if appendLogs {
			want = "=== echo: echo first\nfirst\n=== echo: echo second\nsecond\n"
		}
		if string(got) != want {
			t.Errorf("AppendLogs %v: log %q, want %q", appendLogs, got, want)
		}
	}
}

func TestWaitForSocket(t *testing.T) {
	r := &Runner{Dir: t.TempDir()}
	socket := filepath.Join(r.Dir, "s.sock")

	quitter, err := r.Start("quitter", filepath.Join(r.Dir, "quitter.log"), nil, "true")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WaitForSocket(socket, quitter, 10*time.Second); err == nil ||
		!strings.Contains(err.Error(), "quitter exited") {
		t.Errorf("a process that exits first: %v", err)
	}

	sleeper, err := r.Start("sleeper", filepath.Join(r.Dir, "sleeper.log"), nil, "sleep", "30")
	if err != nil {
		t.Fatal(err)
	}
	defer sleeper.Kill()
	if _, err := WaitForSocket(socket, sleeper, 100*time.Millisecond); err == nil ||
		!strings.Contains(err.Error(), "did not answer within 100ms") {
		t.Errorf("no socket: %v", err)
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := WaitForSocket(socket, sleeper, 10*time.Second); err != nil {
		t.Errorf("a listening socket: %v", err)
	}
}
