//go:build unix

// Package listenownertest starts TCP listeners owned by another user, for the tests of code that
// must refuse them: listenowner's own, and the CLIs'. The listener runs in a child process (the
// squatter command beside this file, built on the fly) started as uid and gid 65534, nobody.
//
// Switching users needs root. Start skips the test when it is not root, except under CI (the
// variable CI set), where a skip would hide that the check went untested: there it fails.
package listenownertest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// Nobody is the uid and gid the squatter runs as.
const Nobody = testbin.Nobody

// Squatter is a listener of another user's.
type Squatter struct {
	// Addr is the address it listens on, as it reports it ("127.0.0.1:41877", "[::]:41877").
	Addr string
	// Port is Addr's port.
	Port int

	lines chan string
}

// Start runs a squatter as Nobody listening on addr ("127.0.0.1:0", "0.0.0.0:0", "[::1]:0",
// "[::]:0"…), and stops it when t ends. accept false leaves connections in its queue, never
// accepted.
func Start(t testing.TB, addr string, accept bool) *Squatter {
	t.Helper()
	return start(t, nil, "-accept="+strconv.FormatBool(accept), addr)
}

// StartNetwork is Start on one network of Go's net.Listen: "tcp6" with "[::]:41877" listens on
// IPv6 only, beside an IPv4 listener of the same port.
func StartNetwork(t testing.TB, network, addr string, accept bool) *Squatter {
	t.Helper()
	return start(t, nil, "-accept="+strconv.FormatBool(accept), "-network="+network, addr)
}

// Adopt runs a squatter as Nobody that accepts the connections of ln, a listener of the test's
// own: the listener is ours, the process that reads from its connections is not.
func Adopt(t testing.TB, ln *net.TCPListener) *Squatter {
	t.Helper()
	f, err := ln.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return start(t, f, "-inherited")
}

func start(t testing.TB, fd3 *os.File, args ...string) *Squatter {
	t.Helper()
	cmd := testbin.AsNobody(t, "a listener of another user", "./squatter", args...)
	if fd3 != nil {
		cmd.ExtraFiles = []*os.File{fd3}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the squatter as uid %d (its folder must be open to that user): %v", Nobody, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	s := &Squatter{lines: make(chan string, 16)}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	first, ok := s.next(10 * time.Second)
	var uid int
	if n, _ := fmt.Sscanf(first, "listening %s uid %d", &s.Addr, &uid); !ok || n != 2 {
		t.Fatalf("the squatter did not start: %q", first)
	}
	if uid != Nobody {
		t.Fatalf("the squatter runs as uid %d, want %d", uid, Nobody)
	}
	i := strings.LastIndexByte(s.Addr, ':')
	if s.Port, err = strconv.Atoi(s.Addr[i+1:]); err != nil {
		t.Fatalf("the squatter listens on %q, which has no port", s.Addr)
	}
	return s
}

// Received waits up to d for the squatter's report on its next connection, which comes when the
// client closed it, and returns what the connection sent: nothing, for a client that refused to
// talk to it.
func (s *Squatter) Received(t testing.TB, d time.Duration) []byte {
	t.Helper()
	line, ok := s.next(d)
	if !ok {
		t.Fatalf("the squatter at %s reported no connection within %s", s.Addr, d)
	}
	q, found := strings.CutPrefix(line, "received ")
	got, err := strconv.Unquote(q)
	if !found || err != nil {
		t.Fatalf("the squatter said %q, want received and a quoted string", line)
	}
	return []byte(got)
}

func (s *Squatter) next(d time.Duration) (string, bool) {
	select {
	case line, ok := <-s.lines:
		return line, ok
	case <-time.After(d):
		return "", false
	}
}
