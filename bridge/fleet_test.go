package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/bridge"
	"github.com/krad-ade/krad/forward"
	"github.com/krad-ade/krad/internal/version"
	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/local"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// A fleet is many SSH hosts for one app, as a user with dozens of machines has them: each host an
// sshd of its own with a home of its own (so its own ~/.krad-ade and its own tmux server, as
// separate machines have), in this computer's namespace or in a network namespace of the test's
// (sshdtest.Options.Netns), or behind a bastion (jump). The app is the one krad-ade runs, with
// its local environment, and its bridges run until the test ends.
type fleet struct {
	t      testing.TB
	hosts  []*sshdtest.Server
	names  []string
	config string // the ssh_config of the hosts (h000, h001, …) and of the bastion, if any
	served *apptest.Served
	local  *api.Client // the local environment's terminal 1, which must be answered throughout

	ctx     context.Context
	cancel  context.CancelFunc
	running sync.WaitGroup

	forward func(*forward.Config) // fleetOptions.forward

	mu      sync.Mutex
	bridges map[string]*bridge.Environment
	upNow   map[string]bool // environment_up, environment_down, as the app said them
}

type fleetOptions struct {
	hosts int
	// host are the options of each host's sshd (Netns and Listen for hosts in a namespace).
	host sshdtest.Options
	// jump, when set, is the bastion every host is reached through (ProxyJump).
	jump *sshdtest.Server
	// forward changes each bridge's forward.Config (keepalives, say).
	forward func(*forward.Config)
}

// newFleet starts the hosts (in parallel: each sshd makes its host key) and the app, with no
// SSH environment yet: up adds them.
func newFleet(t testing.TB, o fleetOptions) *fleet {
	t.Helper()
	testbin.Need(t, "tmux", "tmux")
	f := &fleet{t: t, bridges: map[string]*bridge.Environment{}, upNow: map[string]bool{}}
	f.hosts = make([]*sshdtest.Server, o.hosts)
	f.names = make([]string, o.hosts)
	var wg sync.WaitGroup
	for i := range o.hosts {
		f.names[i] = fmt.Sprintf("h%03d", i)
		wg.Go(func() {
			opts := o.host
			opts.Config = append([]string{"MaxSessions 100"}, opts.Config...)
			f.hosts[i] = sshdtest.Start(t, opts)
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Cleanup(func() {
		for _, h := range f.hosts {
			_ = exec.Command("tmux", "-S", h.Home+"/.krad-ade/tmux/"+app.SocketName, "kill-server").Run()
		}
	})
	var cfg strings.Builder
	if o.jump != nil {
		cfg.WriteString(o.jump.HostBlock("bastion"))
	}
	for i, h := range f.hosts {
		var extra []string
		if o.jump != nil {
			extra = append(extra, "ProxyJump bastion")
		}
		cfg.WriteString(h.HostBlock(f.names[i], extra...))
	}
	f.config = filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(f.config, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	ln, err := local.ListenLoopback("")
	if err != nil {
		t.Fatal(err)
	}
	localSock := t.TempDir() + "/local.sock"
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", localSock, "kill-server").Run() })
	f.served = apptest.ServeApp(t, ln, app.Config{
		BinDir: testbin.Dir(t), Path: "/usr/bin:/bin",
		Tmux:   app.TmuxConfig{SocketPath: localSock, ConfigFile: "/dev/null", Env: []string{"PATH=/usr/bin:/bin", "SHELL=/bin/sh"}},
		Logger: benchLog,
	}, local.Config{Build: version.Build})
	f.local = &api.Client{Endpoint: f.served.Bus.Addr(), Token: f.served.Token,
		From: api.FromTerminal(api.TerminalID{Environment: app.Local, Terminal: 1})}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() {
		f.cancel()
		f.running.Wait()
		// A command a bridge ran on a host as it stopped (sshd, run as root, lets it finish)
		// may still write under the host's home, which the test is about to remove.
		deadline := time.Now().Add(10 * time.Second)
		for _, h := range f.hosts {
			for len(h.Sessions()) > 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	sub, unsubscribe := context.WithCancel(context.Background())
	t.Cleanup(unsubscribe)
	_, events := f.served.App.Subscribe(sub)
	go func() {
		for ev := range events {
			if ev.App == nil || (ev.App.Kind != api.EnvironmentUp && ev.App.Kind != api.EnvironmentDown) {
				continue
			}
			f.mu.Lock()
			f.upNow[ev.App.Environment] = ev.App.Kind == api.EnvironmentUp
			f.mu.Unlock()
		}
	}()
	f.forward = o.forward
	return f
}

// up adds the hosts as SSH environments and runs their bridges, and returns the time until the
// last is up (attached to its tmux, its terminal open).
func (f *fleet) up(d time.Duration) time.Duration {
	f.t.Helper()
	began := time.Now()
	for _, name := range f.names {
		fc := forward.Config{Host: name, UserConfig: f.config, SystemConfig: forward.None, AgentSocket: forward.None, Logger: benchLog,
			Target: func(ctx context.Context) (net.Conn, error) { return f.served.Bus.Pipe(ctx, access.FromForward(name)) },
			OnStatus: func(s forward.Status) {
				if benchLog != nil {
					benchLog.Info("status", "env", name, "after", time.Since(began), "status", s.String())
				}
			}}
		if f.forward != nil {
			f.forward(&fc)
		}
		br := bridge.New(bridge.Config{Name: name, Token: f.served.Token, Instance: "fleet", BinDir: testbin.Dir(f.t),
			Version: version.Build, Logger: benchLog, Forward: fc})
		if err := f.served.App.AddEnvironment(app.Remote{Name: name, Host: br}, nil); err != nil {
			f.t.Fatal(err)
		}
		f.mu.Lock()
		f.bridges[name] = br
		f.mu.Unlock()
		f.running.Go(func() { _ = br.Run(f.ctx) })
	}
	for _, name := range f.names {
		select {
		case <-f.served.App.ReadyOf(name):
		case <-time.After(d):
			f.t.Fatalf("environment %s did not come up within %s: %s", name, d, f.bridge(name).Status())
		}
	}
	return time.Since(began)
}

// down removes the environments from the app, their token files from the hosts, and stops their
// bridges, as config.toml's loss of them or the app's exit does (their tmux sessions stay on the
// hosts, and the next up adopts them; it writes the token files again, as an app's start, with a
// new token, must); the fleet can be brought up again.
func (f *fleet) down() {
	f.t.Helper()
	var wg sync.WaitGroup
	for _, name := range f.names {
		wg.Go(func() {
			if err := f.served.App.RemoveEnvironment(context.Background(), name); err != nil {
				f.t.Error(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := f.bridge(name).Cleanup(ctx); err != nil {
				f.t.Error(err)
			}
		})
	}
	wg.Wait()
	f.cancel()
	f.running.Wait()
	f.ctx, f.cancel = context.WithCancel(context.Background())
}

func (f *fleet) bridge(name string) *bridge.Environment {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bridges[name]
}

// ports is each environment's forwarded address on its host, now.
func (f *fleet) ports() map[string]string {
	m := map[string]string{}
	for _, name := range f.names {
		m[name] = f.bridge(name).Status().Addr
	}
	return m
}

// throughForward makes one Hello through the forward of environment name on its host, as a
// terminal there would (krad in the host's terminal 1), over dial, a connection made on the
// host's side (the host's own loopback, in its namespace).
func (f *fleet) throughForward(ctx context.Context, name, addr string, dial func(context.Context, string, string) (net.Conn, error)) error {
	c := &api.Client{Endpoint: addr, Token: f.served.Token, Dial: dial,
		From: api.FromTerminal(api.TerminalID{Environment: name, Terminal: 1})}
	a, err := c.Call(ctx, api.NewRequest(api.Hello, nil))
	if err != nil {
		return err
	}
	var h api.HelloAnswer
	return a.Decode(api.AnswerHello, &h)
}

// isUp says whether the app is attached to the environment's tmux now.
func (f *fleet) isUp(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.upNow[name]
}

// back says whether environment name is back, as a user would check it: its connection up on
// the address it had in want, the app attached to its tmux, and a Hello answered through its
// forward on the host.
func (f *fleet) back(name, want string, dial func(context.Context, string, string) (net.Conn, error)) error {
	if st := f.bridge(name).Status(); st.State != forward.Connected || st.Addr != want {
		return fmt.Errorf("not connected on %s: %s", want, st)
	}
	if !f.isUp(name) {
		return errors.New("the app is not attached to its tmux")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return f.throughForward(ctx, name, want, dial)
}

// allThrough waits until every environment is back (see back) on the address it had in want,
// and returns when the last was; it fails the test after d.
func (f *fleet) allThrough(want map[string]string, d time.Duration, dial func(context.Context, string, string) (net.Conn, error)) time.Time {
	f.t.Helper()
	deadline := time.Now().Add(d)
	var last time.Time
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for _, name := range f.names {
		wg.Go(func() {
			for {
				err := f.back(name, want[name], dial)
				if err == nil {
					mu.Lock()
					if now := time.Now(); now.After(last) {
						last = now
					}
					mu.Unlock()
					return
				}
				if time.Now().After(deadline) {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("%s: %v", name, err))
					mu.Unlock()
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		f.t.Fatalf("%d of %d environments not answering through their forward on their old port within %s:\n%s",
			len(failed), len(f.names), d, strings.Join(failed, "\n"))
	}
	return last
}

// answered makes a List from the local environment's terminal 1 every 20 ms until the returned
// function is called, which gives the slowest answer and the requests that failed (none should:
// the app's own terminals are answered whatever its hosts do).
func (f *fleet) answered() func() (slowest time.Duration, n int, failures []string) {
	stop := make(chan struct{})
	done := make(chan struct{})
	var slowest time.Duration
	var n int
	var failures []string
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			t0 := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := f.local.Call(ctx, api.NewRequest(api.List, nil))
			cancel()
			slowest = max(slowest, time.Since(t0))
			n++
			if err != nil {
				failures = append(failures, err.Error())
			}
		}
	}()
	return func() (time.Duration, int, []string) {
		close(stop)
		<-done
		return slowest, n, failures
	}
}
