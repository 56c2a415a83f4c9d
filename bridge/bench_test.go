package bridge_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/bridge"
	"github.com/krad-ade/krad/forward"
	"github.com/krad-ade/krad/internal/apptest"
	"github.com/krad-ade/krad/internal/testbin"
	"github.com/krad-ade/krad/internal/version"
	"github.com/krad-ade/krad/local"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// Run with:
//
//	go test -run '^$' -bench . -benchtime 2000x ./bridge
//
// BenchmarkTunnelHello is Hello from the host's side of the tunnel, through our reverse forward
// and through OpenSSH's own `ssh -R` to the same bus on the same sshd, in the same run; each
// reports p50 and p99 in milliseconds. BenchmarkMemoryPerEnvironment is the app's memory for each
// of 20 SSH environments connected to one sshd.

func percentiles(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	at := func(p float64) float64 {
		return float64(d[min(len(d)-1, int(float64(len(d))*p))]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// busForBench is a bus with no app behind it: Hello is what is measured.
func busForBench(b *testing.B) (*local.Server, api.Token) {
	s := apptest.Serve(b, local.Config{Build: version.Build})
	return s.Bus, s.Token
}

// helloLoop makes b.N Hellos at endpoint as a terminal of the environment "bench", as a
// host's terminal calls (a forward refuses the Client caller).
func helloLoop(b *testing.B, endpoint string, tok api.Token) {
	c := &api.Client{Endpoint: endpoint, Token: tok, From: api.FromTerminal(api.TerminalID{Environment: "bench", Terminal: 1})}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.Call(ctx, api.NewRequest(api.Hello, nil))
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	percentiles(b, lat)
}

func BenchmarkTunnelHello(b *testing.B) {
	srv := sshdtest.Start(b, sshdtest.Options{})
	bus, tok := busForBench(b)
	b.Run("forward=krad", func(b *testing.B) {
		ourForward(b, srv, func(ctx context.Context) (net.Conn, error) { return bus.Pipe(ctx, local.FromForward("bench")) }, tok)
	})
	b.Run("forward=krad-tcp", func(b *testing.B) { ourForward(b, srv, dialTCP(bus.Addr()), tok) })
	b.Run("forward=openssh", func(b *testing.B) {
		host, port, _ := strings.Cut(srv.Addr, ":")
		cmd := exec.Command("ssh", "-N", "-F", "none", "-p", port, "-i", srv.KeyFile, "-o", "IdentitiesOnly=yes",
			"-o", "UserKnownHostsFile="+srv.KnownHosts, "-o", "ExitOnForwardFailure=yes",
			"-R", "127.0.0.1:0:"+bus.Addr(), srv.User+"@"+host)
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		allocated := regexp.MustCompile(`Allocated port (\d+) for remote forward`)
		portCh := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				if m := allocated.FindStringSubmatch(sc.Text()); m != nil {
					portCh <- m[1]
				}
			}
		}()
		var p string
		select {
		case p = <-portCh:
		case <-time.After(30 * time.Second):
			b.Fatal("ssh -R did not allocate a port")
		}
		helloLoop(b, "127.0.0.1:"+p, tok)
	})
}

// BenchmarkMemoryPerEnvironment: the app with 20 SSH environments on one sshd, each connected,
// prepared and attached to its tmux; reports the Go heap and the goroutine stacks the 20 hold,
// per environment.
func BenchmarkMemoryPerEnvironment(b *testing.B) {
	testbin.Need(b, "tmux", "tmux")
	const n = 20
	bin := testbin.Dir(b)
	tmpdir := b.TempDir()
	srv := sshdtest.Start(b, sshdtest.Options{Env: []string{"TMUX_TMPDIR=" + tmpdir}, Config: []string{"MaxSessions 100", "MaxStartups 100"}})
	b.Cleanup(func() {
		_ = exec.Command("tmux", "-S", srv.Home+"/.krad-ade/tmux/"+app.SocketName, "kill-server").Run()
	})
	cfgFile := srv.WriteSSHConfig(b, "h")
	tok, _ := api.NewToken()
	ln, err := local.ListenLoopback("")
	if err != nil {
		b.Fatal(err)
	}
	measure := func() (heap, stacks uint64) {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse, m.StackInuse
	}
	var remotes []app.Remote
	var bridges []*bridge.Environment
	for i := range n {
		name := fmt.Sprintf("h%02d", i)
		br := bridge.New(bridge.Config{
			Name: name, Token: tok, Instance: "bench", BinDir: bin, Version: version.Build,
			Forward: forward.Config{Host: "h", Target: dialTCP(ln.Addr().String()), UserConfig: cfgFile, SystemConfig: forward.None, AgentSocket: forward.None},
		})
		bridges = append(bridges, br)
		remotes = append(remotes, app.Remote{Name: name, Host: br})
	}
	localSock := b.TempDir() + "/local.sock"
	b.Cleanup(func() { _ = exec.Command("tmux", "-S", localSock, "kill-server").Run() })
	model := apptest.ServeApp(b, ln, app.Config{
		BinDir: bin, Path: "/usr/bin:/bin",
		Tmux:    app.TmuxConfig{SocketPath: localSock, ConfigFile: "/dev/null", Env: []string{"PATH=/usr/bin:/bin", "SHELL=/bin/sh"}},
		Remotes: remotes,
	}, local.Config{BusToken: tok, Build: version.Build}).App
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	heap0, stack0 := measure()
	for _, br := range bridges {
		go func() { _ = br.Run(ctx) }()
	}
	for _, r := range remotes {
		select {
		case <-model.ReadyOf(r.Name):
		case <-time.After(120 * time.Second):
			b.Fatalf("environment %s did not come up", r.Name)
		}
	}
	heap1, stack1 := measure()
	perEnv := float64((heap1-heap0)+(stack1-stack0)) / n / (1 << 20)
	for range b.N {
	}
	b.ReportMetric(perEnv, "MiB/env")
	b.ReportMetric(float64(heap1-heap0)/n/(1<<20), "heap-MiB/env")
}

// ourForward measures Hello through our reverse forward to srv, whose connections reach the bus
// through target: bus.Pipe, as krad-ade does, or a TCP dial, for comparison.
func ourForward(b *testing.B, srv *sshdtest.Server, target func(context.Context) (net.Conn, error), tok api.Token) {
	cfgFile := srv.WriteSSHConfig(b, "h")
	up := make(chan string, 1)
	conn := forward.New(forward.Config{
		Host: "h", Target: target, UserConfig: cfgFile, SystemConfig: forward.None, AgentSocket: forward.None,
		OnStatus: func(s forward.Status) {
			if s.State == forward.Connected {
				select {
				case up <- s.Addr:
				default:
				}
			}
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = conn.Run(ctx) }()
	var addr string
	select {
	case addr = <-up:
	case <-time.After(30 * time.Second):
		b.Fatalf("no forward: %s", conn.Status())
	}
	helloLoop(b, addr, tok)
}

// dialTCP is a forward.Config Target that dials the bus over TCP, as a second connection on this
// computer: what krad-ade did before it carried forwarded connections through local.Server.Pipe.
func dialTCP(addr string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}
