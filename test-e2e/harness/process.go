package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PidsFile, in a run's work directory, lists the pid of every child a harness started: run.sh's trap
// (kill_recorded_children in test-e2e/sidecars/lib.sh) kills them should the harness itself be killed.
const PidsFile = "pids"

// Runner starts a harness's child processes. Its fields are where the harnesses differ.
type Runner struct {
	// Dir is the run's work directory: each child's pid goes into Dir/PidsFile, and NothingLeft looks for
	// processes whose command line names it.
	Dir string
	// AppendLogs makes each start append to its log after a line naming the command, so that a child
	// restarted into the same log keeps the earlier runs. Otherwise a start truncates its log.
	AppendLogs bool
	// StopDeadline is how long Stop waits after SIGTERM.
	StopDeadline time.Duration
	// SIGTERMMayKill makes death by Stop's SIGTERM a clean end: a process without a handler for it, having
	// nothing to clean up. Otherwise only exit 0, or 143 (the JVM after its shutdown hooks ran), is clean.
	SIGTERMMayKill bool
}

// Process is a child started by a Runner.
type Process struct {
	Name   string
	Log    string // where its stdout and stderr go
	cmd    *exec.Cmd
	runner *Runner
	done   chan struct{}
	err    error // Wait's result, once done is closed
}

// Start starts argv in a process group of its own (so that Kill takes its children too), to be killed
// with SIGKILL should the harness die, with attr's other settings (a namespace, say; nil for none).
func (r *Runner) Start(name, logPath string, attr *syscall.SysProcAttr, argv ...string) (*Process, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if r.AppendLogs {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	logFile, err := os.OpenFile(logPath, flags, 0o644)
	if err != nil {
		return nil, err
	}
	if r.AppendLogs {
		fmt.Fprintf(logFile, "=== %s: %s\n", name, strings.Join(argv, " "))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	attr.Setpgid, attr.Pdeathsig = true, syscall.SIGKILL
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	p := &Process{Name: name, Log: logPath, cmd: cmd, runner: r, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	if f, err := os.OpenFile(filepath.Join(r.Dir, PidsFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintf(f, "%d\n", cmd.Process.Pid)
		f.Close()
	}
	return p, nil
}

// Pid is the process's pid; 0 for a process that did not start (nil), so a check's detail may name it
// before the check looks at Start's error.
func (p *Process) Pid() int {
	if p == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is how the process ended (Wait's error; nil for exit 0); meaningful once Exited.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Stop sends SIGTERM, waits up to the runner's StopDeadline, and says how the process ended; an end that
// is not clean (see Runner.SIGTERMMayKill) is an error.
func (p *Process) Stop() (string, error) {
	if p.Exited() {
		return "", fmt.Errorf("%s had already exited (%v) before SIGTERM", p.Name, p.err)
	}
	began := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return "", err
	}
	select {
	case <-p.done:
	case <-time.After(p.runner.StopDeadline):
		return "", fmt.Errorf("%s still running %s after SIGTERM", p.Name, p.runner.StopDeadline)
	}
	status, err := endAfterSIGTERM(p.Name, p.err, p.runner.SIGTERMMayKill)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s in %s", status, time.Since(began).Round(time.Millisecond)), nil
}

// endAfterSIGTERM judges Wait's result for the process name, sent SIGTERM: its status if the end is clean.
func endAfterSIGTERM(name string, waitErr error, sigtermMayKill bool) (string, error) {
	var exitErr *exec.ExitError
	if !errors.As(waitErr, &exitErr) {
		if waitErr != nil {
			return "", waitErr
		}
		return "exit 0", nil
	}
	status := exitErr.ProcessState.String()
	ws, _ := exitErr.Sys().(syscall.WaitStatus)
	// 143 = 128 + SIGTERM: the JVM's status after its shutdown hooks ran on SIGTERM.
	if exitErr.ExitCode() == 143 || sigtermMayKill && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
		return status, nil
	}
	return "", fmt.Errorf("%s ended with %s after SIGTERM", name, status)
}

// Kill ends the process group at once and waits for the process, and for the rest of its group to be gone; nil
// or exited, it does nothing. SIGKILL is sent to the whole group at once, but each member dies when the kernel
// next runs it: on a loaded machine, a child the process forked can still be alive (its command line readable)
// a moment after the process itself was reaped. The wait is bounded (groupGoneWithin); what is still there then
// is NothingLeft's to name.
func (p *Process) Kill() {
	if p != nil && !p.Exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		waitGroupGone(p.cmd.Process.Pid, groupGoneWithin)
	}
}

const groupGoneWithin = 5 * time.Second

// waitGroupGone returns once no live process is in process group pgid (a zombie, dead and waiting for its
// parent to reap it, counts as gone), or after limit.
func waitGroupGone(pgid int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for groupHasLiveMember(pgid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// groupHasLiveMember reads each process's /proc/PID/stat: its state (the field after the command's closing
// parenthesis) and its process group (the third field after it).
func groupHasLiveMember(pgid int) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		text := string(stat)
		fields := strings.Fields(text[strings.LastIndexByte(text, ')')+1:])
		if len(fields) > 2 && fields[0] != "Z" && fields[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

// NothingLeft fails, naming them, if processes other than this one still name the work directory in
// their command line: children that outlived their Stop or Kill, or theirs.
func (r *Runner) NothingLeft() error {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), r.Dir) {
			found = append(found, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("still running: %s", strings.Join(found, "; "))
	}
	return nil
}
