package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/local"
)

const (
	busHex  = "6f1c0d9e2b7a4c58e3f09a1d7b6c2e40"
	leadHex = "0123456789abcdef0123456789abcdef"
)

// asMain makes the test binary run krad-bench's Run instead of the tests, so that the baseline
// can be started as a child process the way krad-bench starts it.
const asMain = "KRAD_BENCH_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		os.Exit(Run(context.Background(), os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr))
	}
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

func mustToken(t testing.TB, s string) api.Token {
	t.Helper()
	tok, err := api.ParseToken(s)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// startBus serves an in-process bus until the test ends and returns it as a target with the
// answer line to its Hello.
func startBus(t testing.TB) (*target, []byte) {
	t.Helper()
	srv, err := local.Listen(local.Config{BusToken: mustToken(t, busHex), LeadToken: mustToken(t, leadHex), Build: "0.1.0-test", PID: 48211})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	tg, err := newTarget("bus", srv.Addr(), mustToken(t, busHex))
	if err != nil {
		t.Fatal(err)
	}
	_, answer, err := newClient(10*time.Second).request(context.Background(), tg)
	if err != nil {
		t.Fatalf("first hello: %v", err)
	}
	return tg, append(answer, '\n')
}

// startInProcessBaseline serves the baseline in this process until the test ends.
func startInProcessBaseline(t testing.TB, answer []byte, line []byte) *target {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveBaseline(ctx, ln, answer) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serveBaseline: %v", err)
		}
	})
	return &target{name: "baseline", addr: ln.Addr().String(), line: line}
}

func TestMeasureHello(t *testing.T) {
	bus, answer := startBus(t)
	if want := `{"Hello":{"api_version":1,"build":"0.1.0-test","pid":48211}}` + "\n"; string(answer) != want {
		t.Fatalf("the bus answers %q, want %q", answer, want)
	}
	base := startInProcessBaseline(t, answer, bus.line)
	o := helloOptions{seq: 40, conc: 200, clients: 4, rounds: 2, warmup: 10, reqTimeout: 10 * time.Second}
	var progress bytes.Buffer
	h := measureHello(context.Background(), bus, base, o, helloGoals, &progress)

	if len(h.Modes) != 2 {
		t.Fatalf("got %d modes, want 2", len(h.Modes))
	}
	for _, m := range h.Modes {
		for _, s := range []Stats{m.App, m.Baseline} {
			if s.Failed != 0 {
				t.Errorf("%s, %s: %d failed: %s", m.Mode, s.Server, s.Failed, s.Failures.String())
			}
			if want := o.rounds * m.Requests; s.Requests != want {
				t.Errorf("%s, %s: got %d requests, want %d", m.Mode, s.Server, s.Requests, want)
			}
			if s.RPS <= 0 || len(s.RoundRPS) != o.rounds || s.P50 <= 0 || s.P99 < s.P50 || s.Max < s.P99 {
				t.Errorf("%s, %s: figures do not add up: %+v", m.Mode, s.Server, s)
			}
		}
	}
	if h.Modes[1].Clients != 4 {
		t.Errorf("concurrent mode has %d clients, want 4", h.Modes[1].Clients)
	}

	rep := &Report{Machine: thisMachine(), Hello: h}
	if rep.Failed() != 0 {
		t.Errorf("report counts %d failures, want 0", rep.Failed())
	}
	var md, js bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"markdown": md.String(), "json": js.String(), "progress": progress.String()} {
		if strings.Contains(out, busHex) {
			t.Errorf("the %s output holds the token", name)
		}
	}
	for _, want := range []string{"| sequential (1 client) | bus |", "| concurrent (4 clients) | baseline |", "| ≥ 80%: "} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// TestLoadCountsFailures: refused and unreachable requests are counted, by class, and not
// measured.
func TestLoadCountsFailures(t *testing.T) {
	bus, _ := startBus(t)
	wrong, err := newTarget("bus", bus.addr, mustToken(t, leadHex))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed, err := newTarget("closed", ln.Addr().String(), mustToken(t, busHex))
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()

	tests := []struct {
		target *target
		class  string
	}{
		{wrong, "error answer unauthorized"},
		{closed, "dial"},
	}
	for _, tt := range tests {
		r := load(context.Background(), tt.target, 3, 12, 5*time.Second)
		if len(r.latencies) != 0 {
			t.Errorf("%s: got %d measured requests, want 0", tt.target, len(r.latencies))
		}
		if got := r.failed.Counts[tt.class]; got != 12 || r.failed.Total() != 12 {
			t.Errorf("%s: got failures %s, want 12 × %s", tt.target, r.failed.String(), tt.class)
		}
		if strings.Contains(r.failed.String(), busHex) || strings.Contains(r.failed.String(), leadHex) {
			t.Errorf("%s: the failures hold a token", tt.target)
		}
	}
}

func TestLoadStopsWithContext(t *testing.T) {
	bus, _ := startBus(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := load(ctx, bus, 2, 100, 5*time.Second)
	if got := r.failed.Counts["not made"]; got != 100 {
		t.Errorf("got %d requests not made, want 100 (failures: %s)", got, r.failed.String())
	}
}

// TestBaselineProcess starts the baseline the way krad-bench does, as serve-baseline in a child
// process, and stops it by closing its stdin.
func TestBaselineProcess(t *testing.T) {
	t.Setenv(asMain, "1")
	t.Setenv("GORACE", "atexit_sleep_ms=0") // the race detector otherwise waits 1s before exiting
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bus, answer := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := startBaseline(ctx, self, os.Environ(), answer, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	base := &target{name: "baseline", addr: b.addr, line: bus.line}
	_, got, err := newClient(5*time.Second).request(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if string(got)+"\n" != string(answer) {
		t.Errorf("the baseline answers %q, want %q", got, answer)
	}
	if r := load(ctx, base, 4, 100, 5*time.Second); r.failed.Total() != 0 {
		t.Errorf("failures: %s", r.failed.String())
	}
	start := time.Now()
	b.stop()
	if d := time.Since(start); d > time.Second {
		t.Errorf("the baseline took %s to stop after its stdin closed", d)
	}
	if code := b.proc.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the baseline exited with %d, want 0", code)
	}
}

func TestRunUsage(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{nil, exitUsage},
		{[]string{"nope"}, exitUsage},
		{[]string{"hello"}, exitUsage},
		{[]string{"hello", "--bin", "x", "--seq", "0", "--conc", "0"}, exitUsage},
		{[]string{"process", "--bin", "x", "--runs", "0"}, exitUsage},
		{[]string{"hello", "-h"}, exitOK},
		{[]string{"help"}, exitOK},
		{[]string{baselineMode}, exitUsage},
		{[]string{"hello", "--bin", t.TempDir(), "--timeout", "5s"}, exitFailed}, // no programs in it
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		if got := Run(context.Background(), tt.args, nil, nil, &stdout, &stderr); got != tt.want {
			t.Errorf("Run(%q) = %d, want %d; stderr:\n%s", tt.args, got, tt.want, stderr.String())
		}
	}
}

func TestPercentile(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 200; i++ {
		s = append(s, time.Duration(i))
	}
	tests := []struct {
		sample   []time.Duration
		permille int
		want     time.Duration
	}{
		{s, 500, 100},
		{s, 990, 198},
		{s, 1000, 200},
		{s[:1], 990, 1},
		{s[:10], 500, 5},
		{s[:10], 990, 10},
		{nil, 500, 0},
	}
	for _, tt := range tests {
		if got := percentile(tt.sample, tt.permille); got != tt.want {
			t.Errorf("percentile(%d values, %d‰) = %d, want %d", len(tt.sample), tt.permille, got, tt.want)
		}
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{9, 1, 5}, 5},
		{[]float64{2000, 9000, 8000, 8500, 8700}, 8500},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		if got := median(tt.xs); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.xs, got, tt.want)
		}
	}
}

func TestChildEnv(t *testing.T) {
	env := []string{"PATH=/bin", "KRAD_ADE_TOKEN=" + busHex, "KRAD_ADE_ENDPOINT=127.0.0.1:1", "TMUX=/tmp/tmux-0/default,1,0", "TMUX_PANE=%1", "XDG_CONFIG_HOME=/old", "HOME=/h"}
	got := strings.Join(childEnv(env, "XDG_CONFIG_HOME=/new"), " ")
	if want := "PATH=/bin HOME=/h XDG_CONFIG_HOME=/new"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// BenchmarkHello is a quick look at the same round trip as `krad-bench hello`, against
// in-process servers: go test -bench Hello ./cmd/krad-bench
func BenchmarkHello(b *testing.B) {
	bus, answer := startBus(b)
	base := startInProcessBaseline(b, answer, bus.line)
	for _, tg := range []*target{bus, base} {
		b.Run(tg.name+"/sequential", func(b *testing.B) {
			c := newClient(10 * time.Second)
			for b.Loop() {
				if _, _, err := c.request(context.Background(), tg); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tg.name+"/parallel", func(b *testing.B) {
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				c := newClient(10 * time.Second)
				for pb.Next() {
					if _, _, err := c.request(context.Background(), tg); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
	// api.Client.Call is what the krad CLI makes: it encodes the envelope on every call.
	b.Run("bus/api.Client", func(b *testing.B) {
		c := &api.Client{Endpoint: bus.addr, Token: mustToken(b, busHex), From: api.FromClient}
		for b.Loop() {
			if _, err := c.Call(context.Background(), api.NewRequest(api.Hello, nil)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
