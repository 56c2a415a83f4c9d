package apptest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/local"
)

// Served is a bus (package local) serving in the test's process, and the app behind it when
// there is one: what krad-ade runs, without the program around it.
type Served struct {
	Bus         *local.Server
	App         *app.App // nil for a bus with no app behind it
	Token, Lead api.Token

	cancel context.CancelFunc
	done   chan struct{} // closed once the bus, and the app, have stopped
}

// Serve serves cfg's bus until Stop or the end of the test. Tokens cfg lacks are made fresh, and
// its Build is "test" when empty.
func Serve(t testing.TB, cfg local.Config) *Served {
	t.Helper()
	return serve(t, cfg, nil)
}

// ServeApp runs the app of acfg behind a bus of lcfg on ln, as krad-ade does: acfg's Endpoint is
// ln's address and its Token the bus token (fresh when lcfg has none). It returns once the app's
// local environment is up (within 60 s, or the test fails), and stops both at Stop or the end of
// the test.
func ServeApp(t testing.TB, ln net.Listener, acfg app.Config, lcfg local.Config) *Served {
	t.Helper()
	fill(t, &lcfg)
	acfg.Endpoint, acfg.Token = ln.Addr().String(), lcfg.BusToken
	a := app.New(acfg)
	lcfg.Handler, lcfg.Listener = a, ln
	s := serve(t, lcfg, a)
	select {
	case <-a.Ready():
	case <-time.After(60 * time.Second):
		t.Fatal("the app's local environment did not come up in 60 s")
	}
	return s
}

func fill(t testing.TB, cfg *local.Config) {
	t.Helper()
	for _, tok := range []*api.Token{&cfg.BusToken, &cfg.LeadToken} {
		if tok.IsZero() {
			var err error
			if *tok, err = api.NewToken(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if cfg.Build == "" {
		cfg.Build = "test"
	}
}

func serve(t testing.TB, cfg local.Config, a *app.App) *Served {
	t.Helper()
	fill(t, &cfg)
	bus, err := local.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Served{Bus: bus, App: a, Token: cfg.BusToken, Lead: cfg.LeadToken, cancel: cancel, done: make(chan struct{})}
	busDone := make(chan struct{})
	go func() { defer close(busDone); _ = bus.Serve(ctx) }()
	go func() {
		defer close(s.done)
		if a != nil {
			_ = a.Run(ctx)
		}
		<-busDone
	}()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// Stop stops the bus and the app, and waits for them (10 s at most, or the test fails). Once
// stopped, later calls do nothing.
func (s *Served) Stop(t testing.TB) {
	t.Helper()
	s.stop(t)
}

func (s *Served) stop(t testing.TB) {
	t.Helper()
	s.cancel()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Error("the bus or the app did not stop in 10 s")
	}
}
