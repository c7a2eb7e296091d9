package harness

import (
	"fmt"
	"net"
	"os"
	"time"
)

// pollInterval is how often a wait looks again; every wait is bounded by its own deadline.
const pollInterval = 20 * time.Millisecond

// WaitForSocket polls until socket exists as a socket and accepts a connection, p has exited, or the
// deadline passes; it returns how long the wait took.
func WaitForSocket(socket string, p *Process, deadline time.Duration) (time.Duration, error) {
	began := time.Now()
	for {
		if fi, err := os.Stat(socket); err == nil && fi.Mode()&os.ModeSocket != 0 {
			if c, err := net.DialTimeout("unix", socket, time.Second); err == nil {
				c.Close()
				return time.Since(began).Round(time.Millisecond), nil
			}
		}
		if p.Exited() {
			return 0, fmt.Errorf("%s exited (%v) before %s answered", p.Name, p.err, socket)
		}
		if time.Since(began) > deadline {
			return 0, fmt.Errorf("%s did not answer within %s", socket, deadline)
		}
		select {
		case <-p.done:
		case <-time.After(pollInterval):
		}
	}
}

// FreeLoopbackAddr is a TCP address on 127.0.0.1 that was free a moment ago, for a child to listen on.
func FreeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
