//go:build e2e

package e2e_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/e2e"
)

// ctxFor is a context that ends after the given minutes or with the test.
func ctxFor(t *testing.T, minutes int) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(minutes)*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stderrOf is what a failed command said on stderr, when exec kept it.
func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

// TestSSHReachesHostsAndTheHostBehindTheBastion has OpenSSH's client on this machine reach two
// hosts directly and a third, on an inner network only, through the bastion with ProxyJump, with
// known_hosts checked strictly.
func TestSSHReachesHostsAndTheHostBehindTheBastion(t *testing.T) {
	t.Parallel()
	outer := e2e.NewNetwork(t, "outer", 21)
	inner := e2e.NewNetwork(t, "inner", 22)
	bastion := e2e.StartHost(t, "bastion", outer, outer.Addr(10), e2e.HostOptions{
		Also: []e2e.Attachment{{Network: inner, Addr: inner.Addr(10)}},
	})
	a := e2e.StartHost(t, "a", outer, outer.Addr(11), e2e.HostOptions{})
	b := e2e.StartHost(t, "b", outer, outer.Addr(12), e2e.HostOptions{})
	c := e2e.StartHost(t, "c", inner, inner.Addr(13), e2e.HostOptions{})
	cfg := e2e.WriteSSHConfig(t, t.TempDir(),
		e2e.SSHEntry{Alias: "bastion", Host: bastion},
		e2e.SSHEntry{Alias: "a", Host: a},
		e2e.SSHEntry{Alias: "b", Host: b},
		e2e.SSHEntry{Alias: "c", Host: c, ProxyJump: "bastion"},
	)
	for _, tc := range []struct {
		alias string
		from  string // the client address the host sees
	}{
		{"a", outer.Addr(1).String()},
		{"b", outer.Addr(1).String()},
		{"c", inner.Addr(10).String()}, // the bastion's inner side: the hop was taken
	} {
		start := time.Now()
		out, err := cfg.Command(ctxFor(t, 1), tc.alias, `echo "$(hostname) $(id -un) $SSH_CONNECTION"`).Output()
		if err != nil {
			t.Fatalf("ssh %s: %v: %s", tc.alias, err, stderrOf(err))
		}
		f := strings.Fields(string(out))
		if len(f) != 6 || f[0] != tc.alias || f[1] != "krad" || f[2] != tc.from {
			t.Errorf("ssh %s said %q, want hostname %s, user krad, from %s", tc.alias, out, tc.alias, tc.from)
		}
		t.Logf("ssh %s: %v", tc.alias, time.Since(start).Round(time.Millisecond))
	}

	// Strict checking is on: with b's keys listed under c's address, c is refused.
	wrong := e2e.WriteSSHConfig(t, t.TempDir(),
		e2e.SSHEntry{Alias: "bastion", Host: bastion},
		e2e.SSHEntry{Alias: "c", Host: c, ProxyJump: "bastion"},
	)
	known := bastion.KnownHosts(outer.Addr(10).String()) + b.KnownHosts(inner.Addr(13).String())
	if err := os.WriteFile(wrong.KnownHosts, []byte(known), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := wrong.Command(ctxFor(t, 1), "c", "true").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "REMOTE HOST IDENTIFICATION HAS CHANGED") {
		t.Errorf("ssh c with b's keys in known_hosts: err %v, said %q; want refused as a changed key", err, out)
	}
}

// TestRemoteForwardOnTheHostVariants proves the host variants the bridge's tests need behave as
// sshd documents: `ssh -R 0:…` binds the host's loopback on a plain host, is refused where
// AllowTcpForwarding is no, and binds every interface where GatewayPorts is yes.
func TestRemoteForwardOnTheHostVariants(t *testing.T) {
	t.Parallel()
	target := lineServer(t, "krad-e2e says hello")
	lan := e2e.NewNetwork(t, "forward", 23)
	plain := e2e.StartHost(t, "plain", lan, lan.Addr(10), e2e.HostOptions{})
	closed := e2e.StartHost(t, "closed", lan, lan.Addr(11), e2e.HostOptions{SSHDConfig: []string{"AllowTcpForwarding no"}})
	open := e2e.StartHost(t, "open", lan, lan.Addr(12), e2e.HostOptions{SSHDConfig: []string{"GatewayPorts yes"}})
	noTmux := e2e.StartHost(t, "notmux", lan, lan.Addr(13), e2e.HostOptions{WithoutTmux: true})
	cfg := e2e.WriteSSHConfig(t, t.TempDir(),
		e2e.SSHEntry{Alias: "plain", Host: plain},
		e2e.SSHEntry{Alias: "closed", Host: closed},
		e2e.SSHEntry{Alias: "open", Host: open},
		e2e.SSHEntry{Alias: "notmux", Host: noTmux},
	)

	t.Run("plain host binds loopback only", func(t *testing.T) {
		port := remoteForward(t, cfg, "plain", target)
		got := plain.Listeners(t, port)
		t.Logf("ssh -R 0:%s plain: the host listens on %q", target, got)
		for _, addr := range got {
			if addr != "127.0.0.1:"+port && addr != "[::1]:"+port {
				t.Errorf("listening on port %s: %q, want loopback only", port, got)
			}
		}
		if len(got) == 0 {
			t.Errorf("nothing listens on port %s", port)
		}
		if got := dialFrom(t, plain, "127.0.0.1", port); got != "krad-e2e says hello" {
			t.Errorf("through the forward: %q", got)
		}
		if got := dialFrom(t, plain, plain.Addr.String(), port); got != "" {
			t.Errorf("the host's own address on the forwarded port answered %q: want refused", got)
		}
	})
	t.Run("AllowTcpForwarding no refuses", func(t *testing.T) {
		ctx := ctxFor(t, 1)
		out, err := cfg.Command(ctx, "-N", "-o", "ExitOnForwardFailure=yes", "-R", "0:"+target, "closed").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "remote port forwarding failed") {
			t.Errorf("ssh -R on a host that forbids forwarding: err %v, said %q; want refused", err, out)
		}
		t.Logf("ssh -R 0:%s closed: %v: %s", target, err, strings.TrimSpace(string(out)))
	})
	t.Run("GatewayPorts yes binds every interface", func(t *testing.T) {
		port := remoteForward(t, cfg, "open", target)
		got := open.Listeners(t, port)
		t.Logf("ssh -R 0:%s open: the host listens on %q", target, got)
		if !slices.Contains(got, "0.0.0.0:"+port) && !slices.Contains(got, "*:"+port) {
			t.Errorf("listening on port %s: %q, want the wildcard address", port, got)
		}
		if got := dialFrom(t, open, open.Addr.String(), port); got != "krad-e2e says hello" {
			t.Errorf("the host's own address through the forward: %q", got)
		}
	})
	t.Run("a host without tmux", func(t *testing.T) {
		out, err := cfg.Command(ctxFor(t, 1), "notmux", "command -v tmux || echo missing").Output()
		if err != nil || strings.TrimSpace(string(out)) != "missing" {
			t.Errorf("command -v tmux on notmux: %q, %v; want missing", out, err)
		}
		out, err = cfg.Command(ctxFor(t, 1), "plain", "command -v tmux").Output()
		if err != nil || strings.TrimSpace(string(out)) != "/usr/bin/tmux" {
			t.Errorf("command -v tmux on plain: %q, %v", out, err)
		}
	})
}

// lineServer listens on this machine's loopback and writes line to each connection; it returns
// its address.
func lineServer(t *testing.T, line string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, line+"\n")
			c.Close()
		}
	}()
	return l.Addr().String()
}

var allocated = regexp.MustCompile(`Allocated port (\d+) for remote forward`)

// remoteForward starts `ssh -N -R 0:target alias` and returns the port the host picked. The ssh
// ends with the test.
func remoteForward(t *testing.T, cfg *e2e.SSHConfig, alias, target string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctxFor(t, 2))
	cmd := cfg.Command(ctx, "-N", "-o", "ExitOnForwardFailure=yes", "-o", "LogLevel=INFO", "-R", "0:"+target, alias)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var said []string
		for sc.Scan() {
			if m := allocated.FindStringSubmatch(sc.Text()); m != nil {
				port <- m[1]
				io.Copy(io.Discard, stderr)
				return
			}
			said = append(said, sc.Text())
		}
		t.Logf("ssh -R %s said: %q", alias, said)
		close(port)
	}()
	select {
	case p, ok := <-port:
		if !ok {
			t.Fatalf("ssh -R 0:%s %s ended without a port", target, alias)
		}
		return p
	case <-time.After(30 * time.Second):
		t.Fatalf("ssh -R 0:%s %s: no port within 30s", target, alias)
	}
	return ""
}

// dialFrom connects from inside the host to addr:port and returns the first line it reads, or ""
// when the connection is refused.
func dialFrom(t *testing.T, h *e2e.Host, addr, port string) string {
	t.Helper()
	out, err := h.Command(ctxFor(t, 1), "krad", "timeout", "10", "bash", "-c",
		fmt.Sprintf(`exec 3<>/dev/tcp/%s/%s && head -n 1 <&3`, addr, port)).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// TestNetworkDisconnectKeepsTheHost cuts a host off its network and puts it back: it keeps its
// address, its processes and its sshd, and SSH reaches it again.
func TestNetworkDisconnectKeepsTheHost(t *testing.T) {
	t.Parallel()
	lan := e2e.NewNetwork(t, "cut", 24)
	a := e2e.StartHost(t, "a", lan, lan.Addr(10), e2e.HostOptions{})
	cfg := e2e.WriteSSHConfig(t, t.TempDir(), e2e.SSHEntry{Alias: "a", Host: a, Options: []string{"ConnectTimeout 3"}})
	sshA := func() error {
		out, err := cfg.Command(ctxFor(t, 1), "a", "true").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}
	if err := sshA(); err != nil {
		t.Fatalf("ssh a before the cut: %v", err)
	}
	started := a.Exec(t, "sh", "-c", "cat /proc/1/stat | cut -d' ' -f22") // sshd's start time
	sleeper := strings.TrimSpace(a.Exec(t, "sh", "-c", "sleep 600 </dev/null >/dev/null 2>&1 & echo $!"))

	start := time.Now()
	a.Disconnect(t, lan)
	t.Logf("disconnect: %v", time.Since(start).Round(time.Millisecond))
	if got := a.Exec(t, "ip", "-4", "-o", "addr", "show", "scope", "global"); got != "" {
		t.Errorf("after disconnect the host still has %q", got)
	}
	start = time.Now()
	if err := sshA(); err == nil {
		t.Errorf("ssh a reached the host while it was disconnected")
	}
	t.Logf("ssh a while cut off failed in %v", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	a.Connect(t, lan)
	t.Logf("connect: %v", time.Since(start).Round(time.Millisecond))
	got := strings.Fields(a.Exec(t, "ip", "-4", "-o", "addr", "show", "scope", "global"))
	if len(got) < 4 || got[3] != a.Addr.String()+"/24" {
		t.Errorf("after connect the host has %q, want %v/24", got, a.Addr)
	}
	a.Exec(t, "kill", "-0", sleeper)
	if now := a.Exec(t, "sh", "-c", "cat /proc/1/stat | cut -d' ' -f22"); now != started {
		t.Errorf("sshd (pid 1) started at tick %s, now %s: the host restarted", started, now)
	}
	start = time.Now()
	for {
		err := sshA()
		if err == nil {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("ssh a after reconnecting: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("ssh a works again %v after connect", time.Since(start).Round(time.Millisecond))
}

// TestRestartAndReplace proves the two ways a host comes back: Restart keeps its host keys (and
// empties its homes when they are tmpfs), Replace is a new machine at the same address whose new
// host key OpenSSH refuses until known_hosts is rewritten.
func TestRestartAndReplace(t *testing.T) {
	t.Parallel()
	lan := e2e.NewNetwork(t, "again", 26)
	keep := e2e.StartHost(t, "keep", lan, lan.Addr(10), e2e.HostOptions{})
	wipe := e2e.StartHost(t, "wipe", lan, lan.Addr(11), e2e.HostOptions{HomeOnTmpfs: true})
	cfg := e2e.WriteSSHConfig(t, t.TempDir(),
		e2e.SSHEntry{Alias: "keep", Host: keep},
		e2e.SSHEntry{Alias: "wipe", Host: wipe},
	)
	for _, h := range []*e2e.Host{keep, wipe} {
		out, err := cfg.Command(ctxFor(t, 1), h.Name, "mkdir -p ~/.krad-ade && echo here > ~/.krad-ade/token && (sleep 600 </dev/null >/dev/null 2>&1 &) && echo started").Output()
		if err != nil || strings.TrimSpace(string(out)) != "started" {
			t.Fatalf("ssh %s: %q, %v: %s", h.Name, out, err, stderrOf(err))
		}
	}
	keysBefore := keep.KnownHosts("x")

	for _, tc := range []struct {
		h    *e2e.Host
		kept bool
	}{{keep, true}, {wipe, false}} {
		start := time.Now()
		tc.h.Restart(t)
		t.Logf("restart %s: %v", tc.h.Name, time.Since(start).Round(time.Millisecond))
		out, err := cfg.Command(ctxFor(t, 1), tc.h.Name, "cat ~/.krad-ade/token 2>/dev/null; pgrep -x sleep || echo no-sleep").Output()
		if err != nil {
			t.Fatalf("ssh %s after restart (known_hosts unchanged): %v: %s", tc.h.Name, err, stderrOf(err))
		}
		want := "no-sleep"
		if tc.kept {
			want = "here\nno-sleep"
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("after restarting %s: %q, want %q", tc.h.Name, got, want)
		}
	}
	if keep.KnownHosts("x") != keysBefore {
		t.Errorf("Restart changed the host keys of keep")
	}

	oldKey := keep.Fingerprint("ssh-ed25519")
	start := time.Now()
	keep.Replace(t)
	t.Logf("replace: %v", time.Since(start).Round(time.Millisecond))
	if newKey := keep.Fingerprint("ssh-ed25519"); newKey == oldKey || newKey == "" {
		t.Errorf("Replace kept the host key %s (now %q)", oldKey, newKey)
	}
	out, err := cfg.Command(ctxFor(t, 1), "keep", "true").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "REMOTE HOST IDENTIFICATION HAS CHANGED") {
		t.Errorf("ssh keep after Replace with the old known_hosts: %v, %q; want refused", err, out)
	}
	cfg = e2e.WriteSSHConfig(t, t.TempDir(), e2e.SSHEntry{Alias: "keep", Host: keep})
	if out, err := cfg.Command(ctxFor(t, 1), "keep", "test ! -e ~/.krad-ade").CombinedOutput(); err != nil {
		t.Errorf("ssh keep after Replace with a new known_hosts: %v: %s", err, out)
	}
}
