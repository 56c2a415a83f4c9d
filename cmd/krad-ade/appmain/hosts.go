package appmain

import (
	"context"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/bridge"
	"github.com/krad-ade/krad/config"
	"github.com/krad-ade/krad/forward"
	"github.com/krad-ade/krad/forward/sshconfig"
	"github.com/krad-ade/krad/internal/version"
)

// cleanupWait bounds the removal of one host's token file, at the app's exit or when config.toml
// drops the host.
const cleanupWait = 5 * time.Second

// hosts are the run's SSH environments, each one's bridge running under ctx (which outlives the
// run's own context by the bridges' cleanup). apply makes them what config.toml says while the
// app runs: a new [[environment]] is connected and prepared, one that is gone is closed as at the
// app's exit (its terminals run on in tmux on the host), one whose ssh or dir changed is closed
// and connected again.
type hosts struct {
	run   *run
	token api.Token
	ports *portFile
	toBus func(env string) func(context.Context) (net.Conn, error)
	model func() *app.App // the model, once made: bridges are made before it
	// sshAskpass is [git] ssh_askpass as the app started: the hosts' terminals get SSH_ASKPASS.
	sshAskpass bool

	ctx context.Context // the bridges' context
	wg  sync.WaitGroup  // the bridges' Runs

	mu sync.Mutex
	on map[string]*host
	// said is the context of the lines about hosts coming up on stdout: the run's own.
	said context.Context
}

// host is one SSH environment's bridge, and what it was made from.
type host struct {
	env    config.Environment
	bridge *bridge.Environment
	stop   context.CancelFunc // ends the bridge's Run
	done   chan struct{}      // closed when it has ended
}

// newHost makes env's bridge; startLocked runs it.
func (hs *hosts) newHost(env config.Environment) *host {
	a := hs.run
	b := bridge.New(bridge.Config{
		Name:       env.Name,
		Dir:        env.Dir,
		Token:      hs.token,
		Instance:   a.instance(),
		BinDir:     filepath.Dir(a.companion),
		Version:    version.Build,
		Logger:     a.log,
		SSHAskpass: hs.sshAskpass,
		Forward: forward.Config{
			Host:   env.SSH,
			Target: hs.toBus(env.Name),
			Logger: a.log,
			// The port of the earlier run (or of this run, for a host config.toml dropped and
			// named again), so that the terminals that outlived it still find the bus.
			PreferredPort: hs.ports.get(env.Name),
			OnStatus: func(s forward.Status) {
				a.log.Info("environment connection", "environment", env.Name, "host", env.SSH, "status", s.String())
				if s.PortChanged != nil {
					a.log.Warn("the forward's port on the host changed: terminals opened before hold the old address; open new ones",
						"environment", env.Name, "old", s.PortChanged.Old, "new", s.PortChanged.New)
				}
				msg := s.String()
				if s.State == forward.Connected {
					hs.ports.set(env.Name, s.Addr)
					if s.PortChanged != nil {
						msg += fmt.Sprintf(" (the port changed from %s: terminals opened before it hold the old address)", s.PortChanged.Old)
					}
				}
				if m := hs.model(); m != nil {
					m.EnvironmentState(env.Name, msg)
				}
			},
			OnWarning: func(w sshconfig.Warning) {
				a.log.Warn("ssh_config line left out", "environment", env.Name, "warning", w.String())
			},
		},
	})
	return &host{env: env, bridge: b}
}

// startAll runs the bridges of the SSH environments of config.toml at the start. They outlive
// ctx by their cleanup: token files are removed from the hosts over the live connections before
// they close, so they run under a context of their own, which the returned func ends.
func (hs *hosts) startAll(ctx context.Context, initial []*host) context.CancelFunc {
	bctx, stopBridges := context.WithCancel(context.WithoutCancel(ctx))
	hs.ctx, hs.said = bctx, ctx
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for _, h := range initial {
		hs.startLocked(h)
	}
	return stopBridges
}

// startLocked runs h's bridge, and says on stdout when the environment is up (or not, after a while).
// hs.mu must be held.
func (hs *hosts) startLocked(h *host) {
	ctx, stop := context.WithCancel(hs.ctx)
	h.stop, h.done = stop, make(chan struct{})
	hs.on[h.env.Name] = h
	hs.wg.Go(func() {
		defer close(h.done)
		_ = h.bridge.Run(ctx)
	})
	model, said, name, b := hs.model(), hs.said, h.env.Name, h.bridge
	go func() {
		// After the line about this computer's environment, as at the start.
		select {
		case <-model.Ready():
		case <-time.After(readyWait):
		case <-said.Done():
			return
		}
		select {
		case <-model.ReadyOf(name):
			fmt.Fprintf(hs.run.stdout, "krad-ade: environment %s: connected to %s (forward %s on the host), krad %s installed; %s\n",
				name, b.Host(), b.Vars().Endpoint, version.Build, b.AttachHint(name))
		case <-time.After(readyWait):
			fmt.Fprintf(hs.run.stdout, "krad-ade: environment %s is not up yet: %s\n", name, b.Status())
		case <-said.Done():
		case <-ctx.Done():
		}
	}()
}

// retry tries every failed (or waiting) connection again at once.
func (hs *hosts) retry() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for _, h := range hs.on {
		h.bridge.Retry()
	}
}

// apply makes the running hosts those of envs, the [[environment]] tables of a new config.toml:
// the removed and changed ones are closed first, all at once, then the new and changed ones are
// added and started. specs are the config's terminals, opened on a new host when it first comes
// up (unless its session already has them).
func (hs *hosts) apply(envs []config.Environment, specs []app.TerminalSpec) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	want := map[string]config.Environment{}
	for _, env := range envs {
		want[env.Name] = env
	}
	var gone []*host
	for name, h := range hs.on {
		if env, ok := want[name]; !ok || env != h.env {
			gone = append(gone, h)
		}
	}
	var wg sync.WaitGroup
	for _, h := range gone {
		delete(hs.on, h.env.Name)
		why := "no longer in config.toml"
		if _, ok := want[h.env.Name]; ok {
			why = "changed in config.toml: connecting again"
		}
		hs.run.log.Info("environment closed: its terminals run on in tmux on the host", "environment", h.env.Name, "why", why)
		wg.Go(func() { hs.close(h) })
	}
	wg.Wait()
	for _, env := range envs {
		if hs.on[env.Name] != nil {
			continue
		}
		h := hs.newHost(env)
		var mine []app.TerminalSpec
		for _, s := range specs {
			if s.Environment == env.Name {
				mine = append(mine, s)
			}
		}
		if err := hs.model().AddEnvironment(app.Remote{Name: env.Name, Host: h.bridge, SSH: env.SSH}, mine); err != nil {
			hs.run.log.Error("environment not added", "environment", env.Name, "err", err)
			continue
		}
		hs.run.log.Info("environment added from config.toml", "environment", env.Name, "host", env.SSH)
		hs.startLocked(h)
	}
}

// close closes one host as the app's exit does: the app detaches from its tmux (its terminals run
// on there), its token file is removed over the live connection, and the connection is closed.
func (hs *hosts) close(h *host) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupWait)
	defer cancel()
	if m := hs.model(); m != nil {
		if err := m.RemoveEnvironment(ctx, h.env.Name); err != nil {
			hs.run.log.Warn("environment removed before the app detached from its tmux", "environment", h.env.Name, "err", err)
		}
	}
	hs.cleanup(h)
	h.stop()
	<-h.done
}

// cleanup removes the token file from h's host, if the connection is up.
func (hs *hosts) cleanup(h *host) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupWait)
	defer cancel()
	if err := h.bridge.Cleanup(ctx); err != nil {
		hs.run.log.Warn("the token file was left on the host", "environment", h.env.Name, "err", err)
	}
}

// stop removes every host's token file, all at once, then closes the connections and waits for
// the bridges to end: the app's exit, once the model has detached from every tmux.
func (hs *hosts) stop() {
	hs.mu.Lock()
	all := slices.Collect(maps.Values(hs.on))
	hs.mu.Unlock()
	var wg sync.WaitGroup
	for _, h := range all {
		wg.Go(func() { hs.cleanup(h) })
	}
	wg.Wait()
	for _, h := range all {
		h.stop()
	}
	hs.wg.Wait()
}
