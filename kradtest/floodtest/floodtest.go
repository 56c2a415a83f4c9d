// Package floodtest floods a server with connections that each hold part of a request line, as
// the attack of the hardening issues does, for the tests of the bounds on what connections hold
// before their token is checked. The flood runs in the test's process, or in a child process run
// as another user (uid and gid 65534, nobody), as another user of this computer or of an SSH host
// would run it; [Flood.Probe] asks what a user would ask while it runs and after.
package floodtest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// Nobody is the uid and gid of the flood's process with Options.AsNobody.
const Nobody = testbin.Nobody

// Options says what to flood, and how.
type Options struct {
	// Addr is the TCP address to flood. Dial, when set, opens the i-th connection instead, in the
	// test's process (for a server's Pipe, say); it cannot go with AsNobody.
	Addr string
	Dial func(i int) (net.Conn, error)
	// Conns is how many connections; each writes Partial bytes of a line, and no newline.
	Conns, Partial int
	// AsNobody runs the flood in a child process as Nobody. That needs root: without it the test
	// is skipped, except under CI (the variable CI set), where it fails.
	AsNobody bool
}

// Flood is a flood under way. Its connections stay open until the test ends.
type Flood struct {
	done chan error // one value: nil once every connection was opened and written to
}

// Start starts the flood in the background.
func Start(t testing.TB, o Options) *Flood {
	t.Helper()
	f := &Flood{done: make(chan error, 1)}
	if o.AsNobody {
		if o.Dial != nil {
			t.Fatal("floodtest: Dial runs in the test's process, not as another user")
		}
		f.startChild(t, o)
		return f
	}
	dial := o.Dial
	if dial == nil {
		dial = func(int) (net.Conn, error) { return net.Dial("tcp", o.Addr) }
	}
	var mu sync.Mutex
	var conns []net.Conn
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	line := bytes.Repeat([]byte("x"), o.Partial)
	go func() {
		for i := range o.Conns {
			select {
			case <-stop:
				f.done <- fmt.Errorf("the test ended after %d connections", i)
				return
			default:
			}
			c, err := dial(i)
			if err != nil {
				f.done <- fmt.Errorf("connection %d: %w", i, err)
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			_, _ = c.Write(line) // fails once the server has dropped it
		}
		f.done <- nil
	}()
	return f
}

// startChild runs the flood in the flooder command, as Nobody.
func (f *Flood) startChild(t testing.TB, o Options) {
	t.Helper()
	cmd := testbin.AsNobody(t, "a flood from another user", "./flooder", "-addr", o.Addr, "-conns", strconv.Itoa(o.Conns), "-partial", strconv.Itoa(o.Partial))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the flood as uid %d: %v", Nobody, err)
	}
	t.Cleanup(func() {
		stdin.Close() // the flooder closes its connections and exits
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "opened "):
			f.done <- nil
		case line != "":
			f.done <- fmt.Errorf("the flood as uid %d: %s", Nobody, line)
		default:
			f.done <- fmt.Errorf("the flood as uid %d ended: %v", Nobody, err)
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
}

// Probe calls probe until every connection of the flood is open and written to, and after more
// times once they are, with pause between calls; it fails the test when the flood could not open
// its connections. It returns how many times probe ran.
func (f *Flood) Probe(t testing.TB, after int, pause time.Duration, probe func()) int {
	t.Helper()
	flooded, n := false, 0
	for runs := 0; ; runs++ {
		if !flooded {
			select {
			case err := <-f.done:
				if err != nil {
					t.Fatalf("flood: %v", err)
				}
				flooded = true
			default:
			}
		}
		if flooded {
			if n == after {
				return runs
			}
			n++
		}
		probe()
		time.Sleep(pause)
	}
}

// Wait waits until every connection of the flood is open and written to, up to d.
func (f *Flood) Wait(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case err := <-f.done:
		if err != nil {
			t.Fatalf("flood: %v", err)
		}
	case <-time.After(d):
		t.Fatalf("the flood did not open its connections within %s", d)
	}
}
