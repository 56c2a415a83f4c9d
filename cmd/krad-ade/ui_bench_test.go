package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
)

// flipperConfig is a terminal that reports the state typed into it (krad report), echo off.
const flipperConfig = `[[terminal]]
title = "flipper"
command = "stty -echo; while read s; do krad report $s; done"
`

// stateRig is the real krad-ade on a screen, an outside subscriber of its bus (which sees a
// worker's state change as its event), and a bare pane of the same tmux (the baseline: a
// program's printf, seen by capture-pane).
type stateRig struct {
	s      *screen
	events chan stamped
	flips  int // the flipper's changes: odd ones to working, even ones to idle
	marks  int // the lines typed into the bare pane
}

// stamped is an agent event and when the outside subscriber read it.
type stamped struct {
	ev api.AgentEvent
	at time.Time
}

func newStateRig(tb testing.TB) *stateRig {
	tb.Helper()
	r := &stateRig{s: startScreen(tb, 120, 40, flipperConfig, nil), events: make(chan stamped, 64)}
	r.s.waitFor(`main:1 .* flipper`)
	apiJSON := filepath.Join(r.s.home, "krad-ade", "api.json")
	token := readToken(tb, apiJSON)
	var endpoint struct{ Endpoint string }
	if b, err := os.ReadFile(apiJSON); err != nil || json.Unmarshal(b, &endpoint) != nil {
		tb.Fatalf("api.json: %v", err)
	}
	tok, err := api.ParseToken(token)
	if err != nil {
		tb.Fatal(err)
	}
	c := &api.Client{Endpoint: endpoint.Endpoint, Token: tok, From: api.Caller{Kind: api.CallerClient}}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	subscribed := make(chan struct{})
	go func() {
		_ = c.Subscribe(ctx, api.NewRequest(api.SubscribeAgents, nil), func(a api.Answer) error {
			at := time.Now()
			if a.Name == api.AnswerAgents {
				close(subscribed)
				return nil
			}
			var ev api.AgentEvent
			if a.Decode(api.AnswerAgentEvent, &ev) == nil {
				r.events <- stamped{ev: ev, at: at}
			}
			return nil
		})
	}()
	select {
	case <-subscribed:
	case <-time.After(uiPatience):
		tb.Fatal("no snapshot on SubscribeAgents")
	}
	// The flipper idle, as a known start: each flip then changes its state.
	if out, err := r.s.appTmux("send-keys", "-t", "main:1", string(api.StateIdle), "Enter").CombinedOutput(); err != nil {
		tb.Fatalf("send-keys: %v: %s", err, out)
	}
	r.s.waitFor(`main:1 +shell +idle `)
	time.Sleep(200 * time.Millisecond) // the stream's events of it, read and dropped
	for len(r.events) > 0 {
		<-r.events
	}
	// The baseline's pane: it prints each line typed into it.
	if out, err := r.s.tmux("new-window", "-d", "-t", "ui", "-n", "bare", `stty -echo; while read x; do printf 'mark %s\n' "$x"; done`).CombinedOutput(); err != nil {
		tb.Fatalf("new-window: %v: %s", err, out)
	}
	return r
}

// flip makes the flipper change state, and returns the time from the change's event on the
// outside stream to the UI's screen showing the new state in its row.
func (r *stateRig) flip() time.Duration {
	r.s.t.Helper()
	r.flips++
	state := []api.State{api.StateIdle, api.StateWorking}[r.flips%2]
	if out, err := r.s.appTmux("send-keys", "-t", "main:1", string(state), "Enter").CombinedOutput(); err != nil {
		r.s.t.Fatalf("send-keys: %v: %s", err, out)
	}
	var event time.Time
	for deadline := time.After(uiPatience); event.IsZero(); {
		select {
		case e := <-r.events:
			if e.ev.Agent.Terminal == 1 && e.ev.Agent.State == state {
				event = e.at
			}
		case <-deadline:
			r.s.t.Fatalf("no event of main:1 becoming %s within %s", state, uiPatience)
		}
	}
	for {
		text := r.s.capture(false)
		if strings.Contains(rowOf(text, "flipper"), " "+string(state)+" ") {
			return time.Since(event)
		}
		if time.Since(event) > uiPatience {
			r.s.t.Fatalf("main:1's row did not show %s within %s of its event:\n%s", state, uiPatience, text)
		}
	}
}

// printf types a line into the bare pane and returns the time from send-keys' return to
// capture-pane showing what the pane's program printed for it.
func (r *stateRig) printf() time.Duration {
	r.s.t.Helper()
	r.marks++
	mark := fmt.Sprintf("mark %d", r.marks)
	if out, err := r.s.tmux("send-keys", "-t", "ui:bare", fmt.Sprint(r.marks), "Enter").CombinedOutput(); err != nil {
		r.s.t.Fatalf("send-keys: %v: %s", err, out)
	}
	began := time.Now()
	for {
		out, err := r.s.tmux("capture-pane", "-p", "-t", "ui:bare").Output()
		if err != nil {
			r.s.t.Fatalf("capture-pane: %v", err)
		}
		if strings.Contains(string(out)+"\n", mark+"\n") {
			return time.Since(began)
		}
		if time.Since(began) > uiPatience {
			r.s.t.Fatalf("the bare pane did not show %q within %s:\n%s", mark, uiPatience, out)
		}
	}
}

// TestUIStateChangeShows: a worker's state change, once its event is out, shows on the UI's
// screen (the deadline only guards a hang; how long it takes is BenchmarkUIStateChange's).
func TestUIStateChangeShows(t *testing.T) {
	r := newStateRig(t)
	for range 4 {
		took := r.flip()
		t.Logf("shown %s after its event (not asserted)", took.Round(time.Millisecond))
	}
}

// BenchmarkUIStateChange measures, on the real krad-ade in a tmux pane, how long a worker's
// state change takes from its event (read by an outside SubscribeAgents stream) to capture-pane
// showing the new state in its row; the baseline, in the same run and the same tmux, is how long
// capture-pane takes to show a plain printf of a program in a bare pane after the line that
// starts it is typed. The two alternate, so that a busy machine weighs on both alike. Both
// include capture-pane's own cost (a tmux client started each time).
//
//	go test -run '^$' -bench UIStateChange -benchtime 200x ./cmd/krad-ade/
func BenchmarkUIStateChange(b *testing.B) {
	r := newStateRig(b)
	for range 4 { // warm up
		r.flip()
		r.printf()
	}
	ui := make([]time.Duration, 0, b.N)
	base := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		ui = append(ui, r.flip())
		base = append(base, r.printf())
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		took []time.Duration
	}{{"ui", ui}, {"printf", base}} {
		slices.Sort(m.took)
		b.ReportMetric(float64(m.took[len(m.took)/2])/1e6, m.name+"-p50-ms")
		b.ReportMetric(float64(m.took[len(m.took)*99/100])/1e6, m.name+"-p99-ms")
	}
}
