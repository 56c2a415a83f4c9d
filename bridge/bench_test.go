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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/bridge"
	"github.com/krad-ade/krad/extension"
	"github.com/krad-ade/krad/forward"
	"github.com/krad-ade/krad/internal/version"
	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/testbin"
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
// of 20 SSH environments connected to one sshd. BenchmarkExtensionTool is a tools/call from a
// host's terminal through the tunnel against the same call made directly here:
//
//	go test -run '^$' -bench ExtensionTool -benchtime 2000x ./bridge

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
		ourForward(b, srv, func(ctx context.Context) (net.Conn, error) { return bus.Pipe(ctx, access.FromForward("bench")) }, tok)
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
	helloLoop(b, forwardTo(b, srv, target), tok)
}

// forwardTo opens our reverse forward on srv to target, until the benchmark ends, and returns
// its address on the host.
func forwardTo(b *testing.B, srv *sshdtest.Server, target func(context.Context) (net.Conn, error)) string {
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
	b.Cleanup(cancel)
	go func() { _ = conn.Run(ctx) }()
	var addr string
	select {
	case addr = <-up:
	case <-time.After(30 * time.Second):
		b.Fatalf("no forward: %s", conn.Status())
	}
	return addr
}

// dialTCP is a forward.Config Target that dials the bus over TCP, as a second connection on this
// computer: what krad-ade did before it carried forwarded connections through local.Server.Pipe.
func dialTCP(addr string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

// extensionHandler is the app's part of an ExtensionTool, and nothing else: any Terminal caller
// is one, and its request goes to the supervisor.
type extensionHandler struct{ sup *extension.Supervisor }

func (extensionHandler) Facts(context.Context, api.Caller, api.Request) (local.Facts, error) {
	return local.Facts{Role: access.RoleTerminal}, nil
}

func (h extensionHandler) Handle(ctx context.Context, c *local.Call) (api.Answer, error) {
	ans, err := h.sup.Handle(ctx, c.From.Terminal.Environment, c.Request.Body.(*api.ExtensionToolBody))
	if err != nil {
		return api.Answer{}, err
	}
	return api.AnswerTo(c.Request.Name, ans)
}

// BenchmarkExtensionTool is one tools/call of the SDK's everything server (greet): from a
// terminal of an SSH host, through our reverse forward and the bus to the supervisor's session,
// against the same call made directly on this computer by the SDK's client over its own session
// to the same server, in the same run. Each reports p50 and p99 in milliseconds.
func BenchmarkExtensionTool(b *testing.B) {
	everything := testbin.Everything(b)
	b.Run("direct", func(b *testing.B) {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		ctx := context.Background()
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(everything)}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			t0 := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "bench"}})
			if err != nil || res.IsError {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		percentiles(b, lat)
	})
	for _, through := range []string{"bus-here", "host-through-tunnel"} {
		b.Run(through, func(b *testing.B) { benchExtensionTool(b, everything, through == "host-through-tunnel") })
	}
}

// benchExtensionTool calls greet through the bus, from this computer's loopback or, with tunnel,
// from the host's side of our reverse forward.
func benchExtensionTool(b *testing.B, everything string, tunnel bool) {
	{
		sup := extension.New(extension.Config{Extensions: []extension.Spec{{Name: "everything", Command: []string{everything}, Environments: []string{"bench"}}}})
		defer sup.Close()
		s := apptest.Serve(b, local.Config{Build: version.Build, Handler: extensionHandler{sup}})
		addr := s.Bus.Addr()
		if tunnel {
			srv := sshdtest.Start(b, sshdtest.Options{})
			addr = forwardTo(b, srv, func(ctx context.Context) (net.Conn, error) { return s.Bus.Pipe(ctx, access.FromForward("bench")) })
		}
		c := &api.Client{Endpoint: addr, Token: s.Token, From: api.FromTerminal(api.TerminalID{Environment: "bench", Terminal: 1})}
		req := api.NewRequest(api.ExtensionTool, &api.ExtensionToolBody{Extension: "everything", Tool: "greet", Arguments: []byte(`{"name":"bench"}`)})
		call := func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			a, err := c.Call(ctx, req)
			var ans api.ExtensionAnswer
			if err != nil || a.Decode(api.AnswerExtension, &ans) != nil || ans.Result == nil || ans.Result.IsError {
				b.Fatalf("ExtensionTool: %v %s", err, a.Body)
			}
		}
		call() // the start of the server is not what is measured
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			t0 := time.Now()
			call()
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		percentiles(b, lat)
	}
}
