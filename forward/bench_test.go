package forward

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/remote/sshdtest"
)

// These benchmarks measure healing against the real sshd, for BENCHMARKS.md:
//
//	go test -run '^$' -bench Heal -benchtime 20x ./forward
//
// ns/op is the mean; the metrics add the median and the worst.

// BenchmarkHealAfterSessionKill: the host's sshd session serving the connection is killed
// (SIGKILL, as an OOM killer or a reboot of sshd would); the time from the kill to the
// forward carrying a round trip again, on the same port.
func BenchmarkHealAfterSessionKill(b *testing.B) {
	e := newEnv(b)
	s := e.startBuild()
	const interval = 100 * time.Millisecond
	cfg := e.cfg("build")
	cfg.ServerAliveInterval = interval
	r := run(b, cfg)
	st, _ := r.connected(0)

	var heals []time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		b.StopTimer()
		// A connection that has answered a keepalive is healthy: its loss is retried at once.
		time.Sleep(3 * interval)
		pids := s.Sessions()
		b.StartTimer()
		start := time.Now()
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		waitRoundTrip(b, r, st.Addr, start)
		heals = append(heals, time.Since(start))
	}
	b.StopTimer()
	reportDurations(b, "heal", heals)
	if r.c.Addr() != st.Addr {
		b.Errorf("the forward moved from %s to %s", st.Addr, r.c.Addr())
	}
}

// BenchmarkHealAfterSilentCut: the path stops passing bytes without closing anything; the time
// for keepalives (200ms × 3) to notice, and, once the path is back after two seconds, the time
// to a round trip through the forward on the same port (the host's stale session that held it
// is ended on the way).
// BenchmarkHealAutossh is BenchmarkHealAfterSessionKill's baseline, in the same run: OpenSSH's
// ssh -R kept up by autossh (AUTOSSH_GATETIME=0, so that it restarts ssh at once) on a fixed port
// of the host, its sshd session killed, timed from the kill to the first round trip through the
// port. Here the kill takes the session's every process, where BenchmarkHealAfterSessionKill kills
// only the session's first, and each op has an autossh of its own: otherwise autossh would never
// get the port back, or back off after a few restarts. Both favour the baseline.
func BenchmarkHealAutossh(b *testing.B) {
	h := newAutosshHeal(b)
	var heals []time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		b.StopTimer()
		heals = append(heals, h.heal(b))
	}
	reportDurations(b, "heal", heals)
}

// autosshHeal is the autossh baseline's set-up: the host, the target its forwards reach.
type autosshHeal struct {
	autossh    string
	e          *env
	s          *sshdtest.Server
	targetAddr string
}

// newAutosshHeal starts a host of its own for the baseline, and the target behind its forwards.
func newAutosshHeal(b *testing.B) *autosshHeal {
	autossh, err := exec.LookPath("autossh")
	if err != nil {
		b.Skip("autossh is not installed (apt-get install autossh)")
	}
	e := newEnv(b)
	s := e.startBuild()
	target := echoServer(b)
	tc, err := target(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer tc.Close()
	return &autosshHeal{autossh: autossh, e: e, s: s, targetAddr: tc.RemoteAddr().String()}
}

// heal starts an autossh, waits for its forward to carry bytes, kills its sshd session and
// returns the time from the kill to the next round trip through the port. The timer is stopped
// when it is called, and when it returns.
func (h *autosshHeal) heal(b *testing.B) time.Duration {
	msg := []byte("hello through the tunnel")
	up := func(addr string, limit time.Duration) bool {
		start := time.Now()
		for time.Since(start) < limit {
			if got, err := roundTrip(addr, msg); err == nil && bytes.Equal(got, msg) {
				return true
			}
			time.Sleep(time.Millisecond)
		}
		return false
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a port free on the host (this machine)
	if err != nil {
		b.Fatal(err)
	}
	fixed := ln.Addr().String()
	ln.Close()
	e := h.e
	cmd := exec.Command(h.autossh, "-M", "0", "-N", "-F", e.config,
		"-o", "UserKnownHostsFile="+e.knownHosts, "-o", "IdentityFile="+e.key, "-o", "IdentitiesOnly=yes",
		"-o", "ExitOnForwardFailure=yes", "-o", "ServerAliveInterval=1", "-o", "ServerAliveCountMax=1",
		"-R", fixed+":"+h.targetAddr, "build")
	cmd.Env = append(os.Environ(), "AUTOSSH_GATETIME=0", "SSH_AUTH_SOCK=")
	// A file, which autossh writes while the benchmark may read it.
	out, err := os.Create(filepath.Join(b.TempDir(), "autossh.log"))
	if err != nil {
		b.Fatal(err)
	}
	said := func() string { text, _ := os.ReadFile(out.Name()); return string(text) }
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // autossh and its ssh, killed together
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Start()
	out.Close() // autossh has its own
	if err != nil {
		b.Fatal(err)
	}
	stop := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }
	defer stop()
	if !up(fixed, 20*time.Second) {
		b.Fatalf("autossh's forward never carried bytes; autossh said:\n%s", said())
	}
	time.Sleep(300 * time.Millisecond)
	// The whole session, its unprivileged child too: autossh has no way to free a port that a
	// surviving process of the old session still holds.
	pids := h.s.SessionProcesses()
	b.StartTimer()
	start := time.Now()
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	ok := up(fixed, 20*time.Second)
	heal := time.Since(start)
	b.StopTimer()
	if !ok {
		b.Fatalf("no round trip through %s 20s after the kill; autossh said:\n%s", fixed, said())
	}
	return heal
}

// BenchmarkHealPaired is the heal after kill -9 beside autossh's, in pairs that alternate which
// goes first, each side on a host of its own, on a quiet machine and on one the benchmark loads
// itself (2 busy processes per CPU, at the same priority):
//
//	go test -run '^$' -bench HealPaired -benchtime 20x ./forward
//
// The app's connection has the keepalives of its defaults (ServerAliveInterval 15 s), autossh
// its best (ServerAliveInterval 1); both lose their session's every process. heal-ratio is the
// app's median over autossh's.
func BenchmarkHealPaired(b *testing.B) {
	for _, c := range []struct {
		name  string
		procs int
	}{{"quiet", 0}, {"loaded", 2 * runtime.NumCPU()}} {
		b.Run(c.name, func(b *testing.B) {
			base := newAutosshHeal(b)
			e := newEnv(b)
			s := e.startBuild()
			r := run(b, e.cfg("build"))
			st, _ := r.connected(0)
			kradHeal := func() time.Duration {
				time.Sleep(1500 * time.Millisecond) // up past servedFor: a healthy connection
				pids := s.SessionProcesses()
				b.StartTimer()
				start := time.Now()
				for _, p := range pids {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
				waitRoundTrip(b, r, st.Addr, start)
				heal := time.Since(start)
				b.StopTimer()
				return heal
			}
			loadMachine(b, c.procs)
			var app, autossh []time.Duration
			b.ResetTimer()
			b.StopTimer()
			for n := 0; n < b.N; n++ {
				if n%2 == 0 {
					app = append(app, kradHeal())
					autossh = append(autossh, base.heal(b))
				} else {
					autossh = append(autossh, base.heal(b))
					app = append(app, kradHeal())
				}
			}
			reportDurations(b, "heal", app)
			reportDurations(b, "autossh-heal", autossh)
			b.ReportMetric(float64(median(app))/float64(median(autossh)), "heal-ratio")
		})
	}
}

// waitRoundTrip waits for a round trip through r's forward at addr, for at most 20 s after start
// (a kill of its session).
func waitRoundTrip(b *testing.B, r *running, addr string, start time.Time) {
	msg := []byte("hello through the tunnel")
	for {
		if got, err := roundTrip(addr, msg); err == nil && bytes.Equal(got, msg) {
			return
		}
		if time.Since(start) > 20*time.Second {
			b.Fatalf("no round trip through %s 20s after the kill; statuses: %v", addr, r.history())
		}
		time.Sleep(time.Millisecond)
	}
}

// loadMachine keeps n busy processes running until the benchmark ends.
func loadMachine(b *testing.B, n int) {
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func BenchmarkHealAfterSilentCut(b *testing.B) {
	e := newEnv(b)
	s := e.startBuild()
	p := newCutProxy(b, s.Addr)
	const interval, count = 200 * time.Millisecond, 3
	cfg := e.cfg("build")
	cfg.Dialer = p.dialer
	cfg.ServerAliveInterval, cfg.ServerAliveCountMax = interval, count
	cfg.ConnectTimeout = time.Second
	r := run(b, cfg)
	st, i := r.connected(0)
	msg := []byte("hello through the tunnel")

	var notices, heals []time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		b.StopTimer()
		time.Sleep(3 * interval)
		p.cut()
		cutAt := time.Now()
		_, j := r.wait(10*time.Second, i+1, func(s Status) bool { return s.State != Connected })
		notices = append(notices, r.at(j).Sub(cutAt))
		time.Sleep(2 * time.Second)
		b.StartTimer()
		start := time.Now()
		p.restore()
		for {
			if got, err := roundTrip(st.Addr, msg); err == nil && bytes.Equal(got, msg) {
				break
			}
			if time.Since(start) > 20*time.Second {
				b.Fatalf("no round trip through %s 20s after the path came back; statuses: %v", st.Addr, r.history())
			}
			time.Sleep(time.Millisecond)
		}
		heals = append(heals, time.Since(start))
		b.StopTimer()
		_, i = r.connected(j)
	}
	reportDurations(b, "notice", notices)
	reportDurations(b, "heal", heals)
	if r.c.Addr() != st.Addr {
		b.Errorf("the forward moved from %s to %s", st.Addr, r.c.Addr())
	}
}

func reportDurations(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)/2])/float64(time.Millisecond), name+"-p50-ms")
	b.ReportMetric(float64(s[len(s)-1])/float64(time.Millisecond), name+"-max-ms")
}
