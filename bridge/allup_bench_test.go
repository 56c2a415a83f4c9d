package bridge_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// Run with:
//
//	go test -run '^$' -bench AllUp -benchtime 1x -timeout 30m ./bridge
//
// BenchmarkAllUp starts N SSH environments at once in one app (N = 1, 20, 100; each host an sshd
// of its own with a home of its own, as N machines are: see fleet), each connected, prepared
// (krad installed, token file written, tmux found) and attached to its tmux session, and reports
// the time until the last is up (allup-s) beside the time N `ssh -N -R` started at once by hand
// take until the last has its forward (ssh-R-allup-s), in the same run. rss-KiB/env is what the N
// add to the process's VmRSS (/proc/self/status, after giving freed memory back to the system),
// per environment. hello-p50-ms and hello-p99-ms are 2,000 Hello round trips to the bus (a
// Client, a TCP connection each) with the N up, once their terminals settled (5 s); hello0-* the
// same, with none, in the same run.
func BenchmarkAllUp(b *testing.B) {
	testbin.Need(b, "tmux", "tmux")
	for _, n := range []int{1, 20, 100} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) { allUp(b, n) })
	}
}

// benchLog is the bridges' log: on stderr with KRAD_BENCH_LOG=1, to see where the time goes.
var benchLog = func() *slog.Logger {
	if os.Getenv("KRAD_BENCH_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return nil
}()

// helloCount is how many Hellos each of the Hello figures is made of.
const helloCount = 2000

func allUp(b *testing.B, n int) {
	f := newFleet(b, fleetOptions{hosts: n})
	bus := f.served.Bus
	// The baseline: N ssh -N -R to the same bus, started at once, until each has its port.
	sshAll := sshRAll(b, f, bus.Addr())

	hello0 := hellos(b, bus.Addr(), f.served.Token, helloCount)
	rss0 := vmRSS(b)
	// The first start on these hosts installs krad on each; every later one finds it there.
	first := f.up(5 * time.Minute)
	f.down()
	again := f.up(5 * time.Minute)
	rss1 := vmRSS(b)
	// The terminals the environments opened settle (their shells start, go quiet) first.
	time.Sleep(5 * time.Second)
	hello1 := hellos(b, bus.Addr(), f.served.Token, helloCount)
	for range b.N {
	}
	b.ReportMetric(first.Seconds(), "first-allup-s")
	b.ReportMetric(again.Seconds(), "allup-s")
	b.ReportMetric(sshAll.Seconds(), "ssh-R-allup-s")
	b.ReportMetric(float64(rss1-rss0)/float64(n), "rss-KiB/env")
	b.ReportMetric(pct(hello0, 0.5), "hello0-p50-ms")
	b.ReportMetric(pct(hello1, 0.5), "hello-p50-ms")
	b.ReportMetric(pct(hello0, 0.99), "hello0-p99-ms")
	b.ReportMetric(pct(hello1, 0.99), "hello-p99-ms")
}

// sshRAll starts an `ssh -N -R 127.0.0.1:0:target` to each of the fleet's hosts, all at once,
// and returns the time until the last says it allocated its port; they are stopped before it
// returns.
func sshRAll(b *testing.B, f *fleet, target string) time.Duration {
	b.Helper()
	n := len(f.names)
	var cmds []*exec.Cmd
	defer func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	got := make(chan error, n)
	began := time.Now()
	for i := range n {
		cmd := exec.Command("ssh", "-N", "-F", f.config, "-o", "ExitOnForwardFailure=yes", "-o", "BatchMode=yes",
			"-R", "127.0.0.1:0:"+target, f.names[i])
		stderr, err := cmd.StderrPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		cmds = append(cmds, cmd)
		go func() {
			sc := bufio.NewScanner(stderr)
			var last string
			for sc.Scan() {
				if strings.Contains(sc.Text(), "Allocated port") {
					got <- nil
					_, _ = io.Copy(io.Discard, stderr)
					return
				}
				last = sc.Text()
			}
			got <- fmt.Errorf("ssh -R ended without a port: %s", last)
		}()
	}
	for range n {
		select {
		case err := <-got:
			if err != nil {
				b.Fatal(err)
			}
		case <-time.After(5 * time.Minute):
			b.Fatal("ssh -R: no port in 5 minutes")
		}
	}
	return time.Since(began)
}

// hellos makes n Hellos to the bus as a Client, one TCP connection each, and returns their
// round trips.
func hellos(b *testing.B, endpoint string, tok api.Token, n int) []time.Duration {
	b.Helper()
	c := &api.Client{Endpoint: endpoint, Token: tok, From: api.FromClient}
	lat := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.Call(ctx, api.NewRequest(api.Hello, nil))
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	return lat
}

func pct(d []time.Duration, p float64) float64 {
	d = slices.Clone(d)
	slices.Sort(d)
	return float64(d[min(len(d)-1, int(float64(len(d))*p))]) / float64(time.Millisecond)
}

// vmRSS is the process's resident memory in KiB, after a collection that gives freed memory back
// to the system.
func vmRSS(b *testing.B) int64 {
	b.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status:", err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
