package forward

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stuckBashrc is a ~/.bashrc that loops while the file hold exists: every command sshd runs
// through bash waits in it. The test removes hold when it ends, so that the shells it left
// looping end too.
func stuckBashrc(t *testing.T, home string) (bashrc string) {
	t.Helper()
	hold := filepath.Join(t.TempDir(), "hold")
	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(hold) })
	bashrc = filepath.Join(home, ".bashrc")
	if err := os.WriteFile(bashrc, []byte("while [ -e '"+hold+"' ]; do sleep 0.1; done\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return bashrc
}

// TestStuckShellStartup: a host whose ~/.bashrc loops answers the handshake, and then no
// command. The attempt fails at its deadline, saying which step and what to check, is retried
// with backoff, and connects once the .bashrc is fixed, with no restart: the shells the loop
// holds (they loop on) do not hold the connection.
func TestStuckShellStartup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.startBuild()
	bashrc := stuckBashrc(t, s.Home)
	cfg := e.cfg("build")
	cfg.CommandTimeout = 2 * time.Second
	r := run(t, cfg)
	st, i := r.wait(30*time.Second, 0, func(s Status) bool { return s.State == Retrying })
	var te *TimeoutError
	if !errors.As(st.Err, &te) || te.Step != "checking the forward" {
		t.Fatalf("status %q, want a *TimeoutError for checking the forward", st)
	}
	if msg := st.String(); !strings.HasPrefix(msg, "retrying in ") ||
		!strings.Contains(msg, ": the host did not finish checking the forward within 2s: ") ||
		!strings.HasSuffix(msg, ": ssh 'build' true") || !strings.Contains(msg, "~/.bashrc") {
		t.Errorf("status %q, want the step, its deadline and what to check", msg)
	}
	if err := os.WriteFile(bashrc, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	st, _ = r.connected(i)
	carries(t, st.Addr)
}

func TestWithin(t *testing.T) {
	ctx := context.Background()
	err := Within(ctx, "buildbox", "installing krad", 50*time.Millisecond, func(ctx context.Context) error {
		<-ctx.Done()
		return errors.New("run on the host: cut short") // however f words it
	})
	var te *TimeoutError
	if !errors.As(err, &te) || te.Step != "installing krad" || te.Host != "buildbox" {
		t.Fatalf("got %v, want the *TimeoutError", err)
	}
	if want := "the host did not finish installing krad within 50ms: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %q, want it to start with %q", err, want)
	}
	// The host goes into the suggested command as one shell word, whatever it holds.
	te.Host = "me@build box;rm -rf ~"
	if want := ": ssh 'me@build box;rm -rf ~' true"; !strings.HasSuffix(te.Error(), want) {
		t.Errorf("got %q, want it to end with %q", te.Error(), want)
	}
	mine := errors.New("tmux is not installed")
	if err := Within(ctx, "b", "s", time.Minute, func(context.Context) error { return mine }); err != mine {
		t.Errorf("f's own error: got %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := Within(cctx, "b", "s", time.Minute, func(ctx context.Context) error { return ctx.Err() }); !errors.Is(err, context.Canceled) {
		t.Errorf("the caller's cancel: got %v", err)
	}
}
