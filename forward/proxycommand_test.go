package forward

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/krad-ade/krad/internal/capped"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// needNC skips the test when OpenBSD's nc is missing, except in CI, where it fails.
func needNC(t testing.TB) {
	t.Helper()
	testbin.Need(t, "nc", "netcat-openbsd")
}

// localProc is what /proc/PID/stat says of a process of this machine: its name, state and
// process group.
type localProc struct {
	comm, state string
	pgrp        int
}

func readProcStat(pid int) (localProc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return localProc{}, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return localProc{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 3 {
		return localProc{}, false
	}
	pgrp, _ := strconv.Atoi(f[2])
	return localProc{comm: s[open+1 : end], state: f[0], pgrp: pgrp}, true
}

// groupAlive lists the processes of the process group pgid that are alive (not zombies).
func groupAlive(pgid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readProcStat(pid); ok && st.pgrp == pgid && st.state != "Z" {
			out = append(out, pid)
		}
	}
	return out
}

// ncFor returns the pids of the nc processes this test binary runs towards port.
func ncFor(port int) []int {
	var out []int
	for _, pid := range sshdtest.Children(os.Getpid()) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if string(b) == "nc\x00127.0.0.1\x00"+strconv.Itoa(port)+"\x00" {
			out = append(out, pid)
		}
	}
	return out
}

// gone says whether pid has left no trace: not running, and reaped (no zombie).
func gone(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return errors.Is(err, os.ErrNotExist)
}

// eventually polls cond for up to d.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func TestProxyCommandConn(t *testing.T) {
	t.Parallel()
	c, err := startProxyCommand("cat", "127.0.0.1:2222")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pid := c.cmd.Process.Pid
	if st, _ := readProcStat(pid); st.pgrp != pid {
		t.Errorf("the command's process group is %d, want its own (%d)", st.pgrp, pid)
	}

	// Its stdin and stdout are the connection.
	if _, err := c.Write([]byte("SSH-2.0-krad\r\n")); err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 14)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "SSH-2.0-krad\r\n" {
		t.Fatalf("read %q, %v; want what was written", got, err)
	}
	// Deadlines hold, as the handshake's timeout needs.
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := c.Read(got); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Read after the deadline = %v, want os.ErrDeadlineExceeded", err)
	}
	if a := c.RemoteAddr(); a.Network() != "proxycommand" || a.String() != "127.0.0.1:2222" {
		t.Errorf("RemoteAddr = %s %s, want proxycommand 127.0.0.1:2222", a.Network(), a)
	}
	if a := c.LocalAddr(); a.Network() != "proxycommand" {
		t.Errorf("LocalAddr network = %s, want proxycommand", a.Network())
	}

	c.Close()
	if !gone(pid) {
		t.Errorf("the command (pid %d) is still there after Close", pid)
	}
	if err := c.exitError(); err != nil {
		t.Errorf("exitError = %v, want nil: Close ended the command, it did not exit by itself", err)
	}
	c.Close() // a second Close is harmless
}

// Close ends the command's whole group, and with SIGKILL what ignores SIGTERM.
func TestProxyCommandCloseEndsGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, command string
		slow          bool // SIGTERM is ignored: SIGKILL comes after killGrace
	}{
		{name: "SIGTERM", command: `sh -c 'sleep 300 & exec sleep 301'`},
		{name: "SIGTERM ignored", command: `sh -c 'trap "" TERM; sleep 300 & exec sleep 301'`, slow: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := startProxyCommand(tc.command, "127.0.0.1:22")
			if err != nil {
				t.Fatal(err)
			}
			pid := c.cmd.Process.Pid
			started := eventually(5*time.Second, func() bool {
				st, _ := readProcStat(pid)
				return st.comm == "sleep" && len(groupAlive(pid)) == 2
			})
			if !started {
				c.Close()
				t.Fatalf("the command and its child did not start: group %v", groupAlive(pid))
			}
			start := time.Now()
			c.Close()
			took := time.Since(start)
			if !gone(pid) {
				t.Errorf("the command (pid %d) was not reaped", pid)
			}
			// The rest of the group was sent SIGKILL, which takes a moment to land.
			if !eventually(2*time.Second, func() bool { return len(groupAlive(pid)) == 0 }) {
				t.Errorf("after Close, the group still has %v", groupAlive(pid))
			}
			// What ended the command says which path Close took; the times say only that it did
			// not wait out the grace for a command that ended at once, nor end one early. (The
			// bound for the one that ended at once was half the grace, and a loaded machine can
			// take that long to schedule a signalled process.)
			ws, _ := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
			want := syscall.SIGTERM
			if tc.slow {
				want = syscall.SIGKILL
			}
			switch {
			case !ws.Signaled() || ws.Signal() != want:
				t.Errorf("the command ended with %v, want %v", c.cmd.ProcessState, want)
			case tc.slow && took < killGrace:
				t.Errorf("Close took %s: SIGKILL came before the %s grace", took, killGrace)
			case !tc.slow && took >= killGrace:
				t.Errorf("Close took %s: it waited out the %s grace for a command that ended on SIGTERM", took, killGrace)
			case took > killGrace+10*time.Second:
				t.Errorf("Close took %s", took)
			}
		})
	}
}

func TestProxyCommandExitError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		command string
		want    string // the error in full, after `ProxyCommand "<command>"`
		prefix  bool   // want is only the start
	}{
		{command: `sh -c 'echo boom >&2; exit 3'`, want: " exited with status 3: boom"},
		{command: `sh -c 'exit 0'`, want: " exited with status 0"},
		{command: `sh -c 'echo first >&2; echo last >&2; echo >&2; exit 1'`, want: " exited with status 1: last"},
		// What the command says is the network's as much as its own: it cannot act on a terminal.
		{command: `sh -c 'printf "\033]0;pwned\007\033[2J gone\n" >&2; exit 1'`, want: ` exited with status 1: \x1b]0;pwned\a\x1b[2J gone`},
		{command: `sh -c 'kill -9 $$'`, want: " was killed by signal 9 (killed)"},
		{command: `krad-no-such-command --x`, want: " exited with status 127: ", prefix: true},
	} {
		t.Run(tc.command, func(t *testing.T) {
			t.Parallel()
			c, err := startProxyCommand(tc.command, "127.0.0.1:22")
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadAll(c); err != nil {
				t.Fatalf("read until the command ends: %v", err)
			}
			c.Close()
			err = c.exitError()
			var pe *proxyError
			if !errors.As(err, &pe) {
				t.Fatalf("exitError = %v, want a *proxyError", err)
			}
			want := "ProxyCommand " + strconv.Quote(tc.command) + tc.want
			if got := err.Error(); got != want && !(tc.prefix && strings.HasPrefix(got, want)) {
				t.Errorf("exitError =\n %q\nwant\n %q", got, want)
			}
			if strings.ContainsFunc(err.Error(), unicode.IsControl) {
				t.Errorf("exitError %q carries control characters", err)
			}
		})
	}
}

// TestStderrTail: what a ProxyCommand says is its stderr's last stderrTail bytes, and of them the
// last line, cut.
func TestStderrTail(t *testing.T) {
	tl := capped.Last(stderrTail)
	tl.Write(bytes.Repeat([]byte("x"), 3000))
	tl.Write([]byte("\nnc: connect to 10.0.0.1 port 22 (tcp) failed: Connection refused\n"))
	if got := len(tl.String()); got != stderrTail {
		t.Errorf("kept %d bytes, want the last %d", got, stderrTail)
	}
	if got, want := termsafe.LastLine(tl.String(), 300), "nc: connect to 10.0.0.1 port 22 (tcp) failed: Connection refused"; got != want {
		t.Errorf("LastLine = %q, want %q", got, want)
	}
	tl.Write(bytes.Repeat([]byte("y"), 5000))
	if got := termsafe.LastLine(tl.String(), 300); !strings.HasPrefix(got, "yyy") || !strings.HasSuffix(got, "…") || len(got) > 320 {
		t.Errorf("LastLine of a long line = %q, want it cut", got)
	}
}

// A host whose ssh_config has ProxyCommand nc %h %p: the connection goes through nc, end to
// end, and nc ends with it.
func TestProxyCommand(t *testing.T) {
	t.Parallel()
	needNC(t)
	e := newEnv(t)
	s := e.startBuild("ProxyCommand nc %h %p")

	cfg := e.cfg("build")
	cfg.Dialer = func(_ context.Context, _, addr string) (net.Conn, error) {
		t.Errorf("dialed %s over TCP, want the ProxyCommand", addr)
		return nil, errors.New("no TCP in this test")
	}
	// nc does not end when the host closes the connection, as long as its stdin is open: a
	// lost connection is noticed by keepalives, as it is by ssh. Within 4 s, not faster: with
	// 200 ms × 2, a loaded machine (the race tests, the fuzzers) once left a keepalive of a live
	// connection unanswered past 600 ms, and the connection was dropped as lost before the test
	// could use it.
	cfg.ServerAliveInterval, cfg.ServerAliveCountMax = time.Second, 3
	r := run(t, cfg)
	st, i := r.connected(0)
	carries(t, st.Addr)
	nc := ncFor(s.Port)
	if len(nc) != 1 {
		t.Fatalf("nc 127.0.0.1 %d processes: %v, want one", s.Port, nc)
	}

	// The connection is lost (its sshd session killed): the old nc is reaped, a new one
	// carries the next connection.
	for _, pid := range s.Sessions() {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	lost, _ := r.wait(10*time.Second, i+1, func(s Status) bool { return s.Err != nil })
	// nc ends as soon as it writes into the closed connection (a keepalive): that is the cause.
	if want := `connection lost: ProxyCommand "nc 127.0.0.1 ` + strconv.Itoa(s.Port) + `" exited`; !strings.Contains(lost.Err.Error(), want) {
		t.Errorf("status %q, want its error to say %q", lost, want)
	}
	st, _ = r.connected(i + 1)
	carries(t, st.Addr)
	if !eventually(5*time.Second, func() bool { return gone(nc[0]) }) {
		t.Errorf("the first connection's nc (pid %d) is still there", nc[0])
	}
	nc = ncFor(s.Port)
	if len(nc) != 1 {
		t.Fatalf("after the reconnect, nc processes: %v, want one", nc)
	}

	// Stopping closes the connection, and ends nc's process group.
	r.stop()
	if !gone(nc[0]) {
		t.Errorf("nc (pid %d) is still there after the connection closed", nc[0])
	}
	if !eventually(2*time.Second, func() bool { return len(groupAlive(nc[0])) == 0 }) {
		t.Errorf("nc's process group still has %v", groupAlive(nc[0]))
	}
}

// The first hop of a ProxyJump chain goes through its own ProxyCommand, as ssh -J does.
func TestProxyCommandFirstHop(t *testing.T) {
	t.Parallel()
	needNC(t)
	e := newEnv(t)
	auth := sshdtest.Options{AuthorizedKeys: []string{e.key + ".pub"}}
	jump, target := sshdtest.Start(t, auth), sshdtest.Start(t, auth)
	e.trust(jump.KnownHostsLine(0), target.KnownHostsLine(0))
	e.writeConfig(hostBlock("jump", jump, "ProxyCommand nc %h %p"), hostBlock("target", target, "ProxyJump jump"))
	cfg := e.cfg("target")
	cfg.Dialer = func(_ context.Context, _, addr string) (net.Conn, error) {
		t.Errorf("dialed %s over TCP, want the first hop's ProxyCommand", addr)
		return nil, errors.New("no TCP in this test")
	}
	r := run(t, cfg)
	st, _ := r.connected(0)
	carries(t, st.Addr)
	if len(ncFor(jump.Port)) != 1 || len(jump.Sessions()) == 0 || len(target.Sessions()) == 0 {
		t.Errorf("nc to the jump host: %v; sessions on the jump host %v, on the target %v; want one of each",
			ncFor(jump.Port), jump.Sessions(), target.Sessions())
	}
}

// A ProxyCommand that fails is retried, as a connection refused is: the error says which
// command ended, how, and its last words.
func TestProxyCommandFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const command = `sh -c 'echo boom >&2; exit 3'`
	e.writeConfig("Host build\n  HostName 127.0.0.1\n  ProxyCommand " + command + "\n")
	r := run(t, e.cfg("build"))
	st, i := r.wait(10*time.Second, 0, func(s Status) bool { return s.State == Retrying || s.State == Failed })
	want := `connect to 127.0.0.1:22: ProxyCommand "sh -c 'echo boom >&2; exit 3'" exited with status 3: boom`
	if st.State != Retrying || st.Err == nil || st.Err.Error() != want {
		t.Fatalf("status = %v, want retrying with the error %q", st, want)
	}
	var pe *pathError
	if errors.As(st.Err, &pe) {
		t.Errorf("the error is the path's, whose probes dial TCP: the ProxyCommand's way is not theirs")
	}
	// It keeps retrying; Run does not give up.
	r.wait(10*time.Second, i+1, func(s Status) bool { return s.State == Retrying })
	select {
	case err := <-r.done:
		r.done <- err
		t.Fatalf("Run returned %v, want it to keep retrying", err)
	default:
	}
}

// A ProxyCommand that never speaks is cut at ConnectTimeout, killed, and its last words said.
func TestProxyCommandTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	e.writeConfig("Host build\n  HostName 127.0.0.1\n  ProxyCommand sh -c 'echo $$ >> " + pidFile + "; echo waiting for the bastion >&2; exec sleep 60'\n")
	cfg := e.cfg("build")
	cfg.ConnectTimeout = 300 * time.Millisecond
	r := run(t, cfg)
	st, _ := r.wait(10*time.Second, 0, func(s Status) bool { return s.State == Retrying || s.State == Failed })
	want := "ssh handshake with 127.0.0.1:22: no answer in 300ms (ConnectTimeout) (ProxyCommand said: waiting for the bastion)"
	if st.State != Retrying || st.Err == nil || st.Err.Error() != want {
		t.Fatalf("status = %v, want retrying with the error %q", st, want)
	}
	// Every attempt's command is gone once Run has returned.
	r.stop()
	b, _ := os.ReadFile(pidFile)
	pids := strings.Fields(string(b))
	if len(pids) == 0 {
		t.Fatal("the ProxyCommand never ran")
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		if !gone(pid) {
			t.Errorf("a timed-out ProxyCommand (pid %d) is still there", pid)
		}
	}
}
