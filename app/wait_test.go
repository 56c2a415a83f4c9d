package app_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/apptest"
)

// These tests send to real programs in real tmux windows and wait, as a lead does with
// `krad send 2 …; krad wait 2`. What Wait must do is decided by what each program shows, so each
// test checks the screen the Wait returned on.

func reaction(d time.Duration) option { return func(c *app.Config) { c.Reaction = d } }

func quiet(d time.Duration) option { return func(c *app.Config) { c.Quiet = d } }

// lines is a screen's lines, each without its trailing blanks.
func lines(screen string) []string {
	ls := strings.Split(screen, "\n")
	for i, l := range ls {
		ls[i] = strings.TrimRight(l, " ")
	}
	return ls
}

// sendAndWait sends text (and Enter) to worker n and waits for it, as a lead would; it returns
// the agent Wait answered with, how long the Wait took, and the screen right after. err says
// when the Wait did not answer with an agent (it timed out).
func (h *harness) sendAndWait(n int, text string, timeout uint32) (api.Agent, time.Duration, string, error) {
	h.t.Helper()
	c := h.as(1)
	if _, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(n), Text: text}); err != nil {
		h.t.Fatalf("Send %q: %v", text, err)
	}
	began := time.Now()
	a, err := h.call(c, api.Wait, &api.WaitBody{Target: api.Target(n), TimeoutSecs: secs(timeout)})
	took := time.Since(began)
	screen := h.read(c, n)
	var ag api.Agent
	if err == nil {
		err = a.Decode("Agent", &ag)
	}
	if err != nil {
		return ag, took, screen, fmt.Errorf("Wait after sending %q: %w after %v; the screen:\n%s", text, err, took.Round(time.Millisecond), screen)
	}
	return ag, took, screen, nil
}

// TestWaitAfterFastAnswers: a program that answers at once is waited on until its answer, and no
// longer. The app's reaction window (the most a Wait waits for a worker that shows nothing and
// starts nothing) is an hour here, far beyond the Wait's own 20 s: a Wait that returns at all
// returned because the app saw the answer, never because the window ran out. Before, output
// within 250 ms of the Enter counted as the echo of what was typed, so every one of these ran
// into the window. The quiet spell is the default, 2 s: what a Wait takes once the answer shows.
func TestWaitAfterFastAnswers(t *testing.T) {
	t.Parallel()
	h := start(t, lead(), reaction(time.Hour), quiet(app.DefaultQuiet))
	c := h.as(1)
	file := filepath.Join(t.TempDir(), "haystack.txt")
	var text strings.Builder
	for i := 1; i <= 300; i++ {
		if i == 150 {
			fmt.Fprintf(&text, "needle at line %d\n", i)
		} else {
			fmt.Fprintf(&text, "hay %d\n", i)
		}
	}
	if err := os.WriteFile(file, []byte(text.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		command []string
		prompt  string // on the screen once the program waits for input
		send    string
		answer  func(screen string) bool
	}{
		{"bash", []string{"bash", "--norc", "--noprofile"}, "bash-", "echo hi",
			func(s string) bool { return slices.Contains(lines(s), "hi") }},
		{"python3", []string{"python3", "-q"}, ">>>", "print(6*7)",
			func(s string) bool { return slices.Contains(lines(s), "42") }},
		{"bc", []string{"bc"}, "warranty", "6*7",
			func(s string) bool { return slices.Contains(lines(s), "42") }},
		// A TUI: less draws the search it is typed, then, on the Enter, the page from the match.
		{"less", []string{"less", file}, "hay 1", "/needle",
			func(s string) bool { return strings.HasPrefix(s, "needle at line 150") }},
	} {
		w := h.agent(c, api.Spawn, &api.SpawnBody{Title: tt.name, Command: tt.command})
		h.waitScreen(c, w.Terminal, tt.prompt)
		if a := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(20)}); a.State != api.StateIdle {
			t.Errorf("%s: before the Send: %s", tt.name, a.State)
			continue
		}
		a, took, screen, err := h.sendAndWait(w.Terminal, tt.send, 20)
		switch {
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case a.State != api.StateIdle:
			t.Errorf("%s: Wait answered %s, want idle", tt.name, a.State)
		case !tt.answer(screen):
			t.Errorf("%s: Wait returned before the answer showed (after %v); the screen:\n%s", tt.name, took.Round(time.Millisecond), screen)
		default:
			t.Logf("%s: Wait took %v", tt.name, took.Round(time.Millisecond))
		}
	}
}

// TestWaitOnSilentCommand: a command typed into a shell that prints nothing for longer than the
// reaction window is working: Wait returns once it has answered, not when the window ends. The
// window is 3 s here and the command silent for 14. Before, the Wait returned after the window,
// with the command still running. A command started by a command the shell runs (bash -c, a
// script) is held the same way, though its name is the shell's.
func TestWaitOnSilentCommand(t *testing.T) {
	t.Parallel()
	h := start(t, lead(), reaction(3*time.Second))
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "bash", Command: []string{"bash", "--norc", "--noprofile"}})
	h.waitScreen(c, w.Terminal, "bash-")
	for _, tt := range []struct{ send, answer string }{
		// The quotes keep the answer out of the echo of the command.
		{`sleep 14; echo fin""ished`, "finished"},
		{`bash -c 'sleep 6; echo sec""ond'`, "second"},
	} {
		a, took, screen, err := h.sendAndWait(w.Terminal, tt.send, 60)
		if err != nil {
			t.Fatal(err)
		}
		if a.State != api.StateIdle || !slices.Contains(lines(screen), tt.answer) {
			t.Errorf("%s: Wait answered %s after %v, before the command answered; the screen:\n%s", tt.send, a.State, took.Round(time.Millisecond), screen)
		}
	}
}

// TestWaitOnNoVisibleReaction: a worker that takes what it is sent and shows nothing (bc given an
// assignment) and starts no command is answered once the reaction window ends, not held until
// the Wait's own timeout.
func TestWaitOnNoVisibleReaction(t *testing.T) {
	t.Parallel()
	h := start(t, lead(), reaction(2*time.Second))
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "bc", Command: []string{"bc", "-q"}})
	if a := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(20)}); a.State != api.StateIdle {
		t.Fatalf("before the Send: %s", a.State)
	}
	a, took, screen, err := h.sendAndWait(w.Terminal, "x=6", 30)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != api.StateIdle || took < 2*time.Second {
		t.Errorf("Wait answered %s after %v, want idle once the 2 s window ended; the screen:\n%s", a.State, took, screen)
	}
	// And what it is sent next is answered as any other.
	if _, _, screen, err := h.sendAndWait(w.Terminal, "x*7", 30); err != nil || !slices.Contains(lines(screen), "42") {
		t.Errorf("the answer to x*7 is not on the screen (%v):\n%s", err, screen)
	}
}

// TestWaitWithASlowLook: a Wait whose look at the worker takes longer than the Wait has left (its
// tmux stopped, as a hung host's would, while the Wait looks after the reaction window) answers
// TimedOut by its own deadline, within the second of slack the bus gives it, and nothing is
// logged as a failed request. Before, the look ran on until the bus's deadline cancelled it, and
// the Wait then answered with that error, logged at Error, about as often as not: several Waits
// at once show it.
func TestWaitWithASlowLook(t *testing.T) {
	t.Parallel()
	var log apptest.Buffer
	h := start(t, lead(), reaction(2*time.Second), withLog(&log))
	c := h.as(1)
	// It reads lines and shows nothing but their echo: a Wait after a Send looks once the
	// reaction window has passed.
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "reader", Command: []string{"sh", "-c", "while read line; do :; done"}})
	if a := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(20)}); a.State != api.StateIdle {
		t.Fatalf("before the Send: %s", a.State)
	}
	if _, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(w.Terminal), Text: "x"}); err != nil {
		t.Fatal(err)
	}
	const waits = 6
	errs := make(chan error, waits)
	for range waits {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := c.Call(ctx, api.NewRequest(api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(4)}))
			errs <- err
		}()
	}
	time.Sleep(time.Second) // the Waits' looks come after the 2 s window: tmux is stopped by then
	resume := h.stopTmux()
	for range waits {
		if err := <-errs; !errors.Is(err, api.ErrTimedOut) {
			t.Errorf("Wait during a slow look: %v, want TimedOut", err)
		}
	}
	resume()
	if logged := log.String(); strings.Contains(logged, "request failed") {
		t.Errorf("a Wait whose look was slow was logged as a failed request:\n%s", logged)
	}
}
