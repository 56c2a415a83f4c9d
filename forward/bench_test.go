package forward

import (
	"bytes"
	"slices"
	"syscall"
	"testing"
	"time"
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
	s := startSSHD(b, sshdOptions{authorized: []string{e.key + ".pub"}})
	e.writeConfig(hostBlock("build", s))
	e.trust(s.knownHostsLine(0))
	const interval = 100 * time.Millisecond
	cfg := e.cfg("build")
	cfg.ServerAliveInterval = interval
	r := run(b, cfg)
	st, _ := r.connected(0)
	msg := []byte("hello through the tunnel")

	var heals []time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		b.StopTimer()
		// A connection that has answered a keepalive is healthy: its loss is retried at once.
		time.Sleep(3 * interval)
		pids := s.sessions()
		b.StartTimer()
		start := time.Now()
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		for {
			if got, err := roundTrip(st.Addr, msg); err == nil && bytes.Equal(got, msg) {
				break
			}
			if time.Since(start) > 20*time.Second {
				b.Fatalf("no round trip through %s 20s after the kill; statuses: %v", st.Addr, r.history())
			}
			time.Sleep(time.Millisecond)
		}
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
func BenchmarkHealAfterSilentCut(b *testing.B) {
	e := newEnv(b)
	s := startSSHD(b, sshdOptions{authorized: []string{e.key + ".pub"}})
	e.writeConfig(hostBlock("build", s))
	e.trust(s.knownHostsLine(0))
	p := newCutProxy(b, s.addr())
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
