package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// withLog has the app log to l, every level: what a test reads of the log while the app runs.
func withLog(l *apptest.Buffer) option {
	return func(c *app.Config) {
		c.Logger = slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}

// TestTerminalLimit: an environment has at most MaxTerminals terminals, whoever opens the windows
// (here by hand in the real tmux, as a host's user can): the windows beyond are left alone,
// unnumbered, subscribers get one terminal_limit event, and Spawn is refused with conflict until a
// terminal closes.
func TestTerminalLimit(t *testing.T) {
	t.Parallel()
	h := start(t, lead(), func(c *app.Config) { c.MaxTerminals = 4 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.events(ctx)
	next(t, ch, "the snapshot", func(a api.Answer) bool { return a.Name == "Agents" })
	for range 6 {
		h.tmuxOut("new-window", "-d", "-t", "main:", "sleep 600")
	}
	ev := next(t, ch, "the limit", appEvent(api.TerminalLimit))
	var limit api.AppEvent
	_ = ev.Decode("AppEvent", &limit)
	if limit.Environment != "main" || !strings.Contains(limit.Message, "4 terminals") {
		t.Errorf("the limit event is %+v, want one naming main and its 4 terminals", limit)
	}
	// The windows beyond the limit stay as they are, without a number.
	unnumbered := func() int {
		return strings.Count(h.tmuxOut("list-windows", "-t", "main", "-F", "[#{@krad_terminal}]"), "[]")
	}
	deadline := time.Now().Add(20 * time.Second)
	for unnumbered() != 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n, agents := unnumbered(), h.agents(h.as(0)); n != 3 || len(agents) != 4 {
		t.Fatalf("%d windows without a number and the terminals %+v; want 3 and 4", n, agents)
	}

	_, err := h.call(h.as(1), api.Spawn, &api.SpawnBody{Title: "one more", Command: []string{"sleep", "60"}})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeConflict || ae.Reason != api.ReasonTooManyTerminals ||
		!strings.Contains(err.Error(), "has 4 terminals") || !strings.Contains(err.Error(), "close some") {
		t.Errorf("Spawn at the limit: %v, want conflict saying the environment has 4 terminals", err)
	}
	if n := len(h.agents(h.as(0))); n != 4 {
		t.Errorf("%d terminals after the refused Spawn, want 4", n)
	}

	// Once a terminal closes there is room again.
	h.tmuxOut("kill-window", "-t", h.window(2))
	deadline = time.Now().Add(20 * time.Second)
	for len(h.agents(h.as(0))) != 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if w := h.agent(h.as(1), api.Spawn, &api.SpawnBody{Title: "after", Command: []string{"sleep", "60"}}); w.Terminal < 5 {
		t.Errorf("the worker after a close is %+v", w)
	}
}

// TestForgedWindowOptions: what the app reads back from its tmux (the @krad options of windows, the
// session's @krad_next) is written by whoever controls that tmux, a host's user included. A
// number near 2^63, a role that is none of the three, a lead or a session out of range, and 100 KB
// of control characters in a session or a group are refused: those windows are taken for windows a
// person opened, numbered after the app's own, and the answers stay small. A window with a @krad the
// app wrote is adopted as before, and one warning sums up the refused ones.
func TestForgedWindowOptions(t *testing.T) {
	t.Parallel()
	var log apptest.Buffer
	h := start(t, lead(), withLog(&log))
	h.stop()

	junk := strings.Repeat(`\u0001\u001b`, 8000) // 96 KB of JSON
	forged := []string{
		`{"terminal":9223372036854775807,"title":"big","role":"lead","session":"main:9223372036854775807"}`,
		`{"terminal":5,"title":"s","role":"lead","session":"` + junk + `"}`,
		`{"terminal":6,"title":"` + junk + `","role":"shell","group":"` + junk + `"}`,
		`{"terminal":7,"title":"r","role":"root"}`,
		`{"terminal":8,"title":"l","role":"worker","session":"main:1","lead":-3}`,
		`{"terminal":2,"title":"x","role":"shell","session":"other:1"}`,
	}
	for i, meta := range forged {
		w := strings.TrimSpace(h.tmuxOut("new-window", "-d", "-P", "-F", "#{window_id}", "-t", "main:", "-n", fmt.Sprintf("forged%d", i), "sleep 600"))
		h.setLongOption(w, "@krad", meta)
	}
	w := strings.TrimSpace(h.tmuxOut("new-window", "-d", "-P", "-F", "#{window_id}", "-t", "main:", "sleep 600"))
	h.tmuxOut("set-option", "-w", "-t", w, "@krad", `{"terminal":9,"title":"kept","role":"worker","session":"main:1","lead":1,"runs":true}`)
	h.tmuxOut("set-option", "-t", "main", "@krad_next", "9223372036854775807")

	h.start(testbin.Dir(t), lead(), withLog(&log))
	a, err := h.call(h.as(0), api.ListAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	var agents []api.Agent
	if err := a.Decode("Agents", &agents); err != nil {
		t.Fatal(err)
	}
	if n := len(a.Body); n > 8<<10 {
		t.Errorf("ListAll is %d bytes for %d terminals, want a few hundred bytes a terminal", n, len(agents))
	}
	want := map[int]string{1: "lead lead main:1", 9: "worker kept main:1"}
	for i := range forged { // numbered after the app's own, in the order tmux lists them
		want[10+i] = fmt.Sprintf("shell forged%d ", i)
	}
	got := map[int]string{}
	for _, ag := range agents {
		got[ag.Terminal] = string(ag.Role) + " " + ag.Title + " " + ag.Session
		if len(got[ag.Terminal]) > 80 {
			got[ag.Terminal] = fmt.Sprintf("%.80q…", got[ag.Terminal])
		}
		if ag.Group != "" {
			t.Errorf("main:%d has the group %.40q", ag.Terminal, ag.Group)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the restart:\n got %v\nwant %v", got, want)
	}
	if w := h.agent(h.as(1), api.Spawn, &api.SpawnBody{Title: "next", Command: []string{"sleep", "60"}}); w.Terminal != 10+len(forged) {
		t.Errorf("the next worker is main:%d, want main:%d", w.Terminal, 10+len(forged))
	}
	logged := log.String()
	if n := strings.Count(logged, "whose @krad the app did not write"); n != 1 || !strings.Contains(logged, fmt.Sprintf("count=%d", len(forged))) {
		t.Errorf("the refused windows were logged %d times, want once with count=%d:\n%s", n, len(forged), logged)
	}
	if !strings.Contains(logged, "next terminal number is out of range") {
		t.Errorf("the forged @krad_next was not logged:\n%s", logged)
	}
	if len(logged) > 16<<10 {
		t.Errorf("the log is %d bytes", len(logged))
	}
}

// setLongOption sets a window option to a value longer than a tmux command may carry, in pieces,
// as any user of the tmux server can (set-option -a appends).
func (h *harness) setLongOption(window, name, value string) {
	h.t.Helper()
	for i := 0; i < len(value); i += 8 << 10 {
		args := []string{"-S", h.socket, "set-option", "-w", "-t", window, name, value[i:min(len(value), i+8<<10)]}
		if i > 0 {
			args = slices.Insert(args, 4, "-a")
		}
		if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
			h.t.Fatalf("tmux set-option %s (%d bytes): %v: %s", name, len(value), err, out)
		}
	}
}

// TestReadIsClipped: Read gives at most the last MaxScreen bytes of a screen, from the start of a
// line, so that its answer fits in what krad reads whatever the host's tmux holds.
func TestReadIsClipped(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	h.tmuxOut("set-option", "-g", "history-limit", "40000")
	line := strings.Repeat("x", 150)
	w := h.agent(h.as(1), api.Spawn, &api.SpawnBody{Title: "long", Command: []string{"sh", "-c",
		`i=0; while [ $i -lt 20000 ]; do echo "$i ` + line + `"; i=$((i+1)); done; echo THE-END; sleep 600`}})
	h.waitScreen(h.as(1), w.Terminal, "THE-END")
	lines := 40000
	a, err := h.call(h.as(1), api.Read, &api.ReadBody{Target: api.Target(w.Terminal), Lines: &lines})
	if err != nil {
		t.Fatal(err)
	}
	var s api.Screen
	if err := json.Unmarshal(a.Body, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Text) > app.MaxScreen || len(s.Text) < app.MaxScreen-200 {
		t.Errorf("Read of a 3 MB history gave %d bytes, want just under %d", len(s.Text), app.MaxScreen)
	}
	if !strings.HasSuffix(s.Text, "THE-END") {
		t.Errorf("the clipped screen does not end with the last line: …%q", s.Text[max(0, len(s.Text)-40):])
	}
	if first, _, _ := strings.Cut(s.Text, " "); strings.Trim(first, "0123456789") != "" {
		t.Errorf("the clipped screen starts in the middle of a line: %.40q", s.Text)
	}
}
