package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
)

// TestMessageOnlyToItsEnvironmentsTerminals: what an agent said with its state (its message,
// here a permission prompt that quotes the command it wants to run) is content, which the spec
// keeps off the wire but for a terminal caller of the agent's environment. A Client (a program
// that found the bus through api.json) gets the agent's id, title, state and state_from from
// List, ListAll and SubscribeAgents (its snapshot and its events), never the message, whose
// words are nowhere in the lines it reads; a terminal of another environment's stream gets the
// event without it too. A terminal of the agent's environment gets it from all three, and from
// Wait; so does the app's own face (Subscribe, in the process).
func TestMessageOnlyToItsEnvironmentsTerminals(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	if err := h.app.AddEnvironment(app.Remote{Name: "box", Host: h.extraHost("", "")}, []app.TerminalSpec{{Title: "lead", Lead: true, Environment: "box"}}); err != nil {
		t.Fatal(err)
	}
	<-h.app.ReadyOf("box")
	<-h.app.Ready()
	client, mine := h.as(0), h.as(1)
	other := &api.Client{Endpoint: h.bus.Addr(), Token: h.token, From: api.FromTerminal(api.TerminalID{Environment: "box", Terminal: 1})}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := func(c *api.Client) <-chan api.Answer {
		ch := make(chan api.Answer, 1024)
		go func() {
			defer close(ch)
			_ = c.Subscribe(ctx, api.NewRequest(api.SubscribeAgents, nil), func(a api.Answer) error { ch <- a; return nil })
		}()
		next(t, ch, "the snapshot", func(a api.Answer) bool { return a.Name == api.AnswerAgents })
		return ch
	}
	streams := map[string]<-chan api.Answer{"Client": stream(client), "main:1": stream(mine), "box:1": stream(other)}
	_, inner := h.app.Subscribe(ctx)

	const said = "Claude needs your permission to use Bash: rm -rf ~/secret-project"
	w := h.agent(mine, api.Spawn, &api.SpawnBody{Title: "asker", Command: []string{"sh", "-c", "krad report needs_input --message '" + said + "'; sleep 600"}})
	// The report landed (the app's own face has its event) before the Wait, which returns at the
	// first settled state: on a loaded machine the worker's silence before its report reached the
	// app was once taken for idle.
	for face := true; face; {
		select {
		case ev := <-inner:
			if ev.Agent != nil && ev.Agent.Agent.Environment == "main" && ev.Agent.Agent.Terminal == w.Terminal && ev.Agent.Agent.State == api.StateNeedsInput {
				if ev.Agent.Agent.Message != said {
					t.Errorf("the app's own face got %+v, want the message", ev.Agent.Agent)
				}
				face = false
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the app's own face got no event of the report")
		}
	}
	if a := h.agent(mine, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(20)}); a.State != api.StateNeedsInput || a.Message != said {
		t.Fatalf("Wait as main:1: %+v, want needs_input with its message", a)
	}

	// The streams: each caller's event of the report, as it may see it.
	for who, ch := range streams {
		ev := next(t, ch, who+"'s event of the report", agentEvent(api.AgentChanged, w.Terminal, api.StateNeedsInput))
		var e api.AgentEvent
		_ = ev.Decode("AgentEvent", &e)
		sees := who == "main:1"
		if e.Agent.StateFrom != api.StateFromReported || e.Agent.Title != "asker" || (e.Agent.Message == said) != sees || strings.Contains(string(ev.Body), "rm -rf") != sees {
			t.Errorf("%s's stream: %s; want the message %v", who, ev.Body, sees)
		}
	}

	// The answers: List, ListAll, and a new stream's snapshot.
	for _, tt := range []struct {
		who  string
		c    *api.Client
		sees bool
	}{{"Client", client, false}, {"main:1", mine, true}} {
		for _, name := range []api.Name{api.List, api.ListAll} {
			a, err := h.call(tt.c, name, nil)
			if err != nil {
				t.Fatalf("%s as %s: %v", name, tt.who, err)
			}
			h.wantAgent(a, tt.who+"'s "+string(name), w.Terminal, said, tt.sees)
		}
		ch := make(chan api.Answer, 16)
		sctx, stop := context.WithCancel(ctx)
		go func() {
			_ = tt.c.Subscribe(sctx, api.NewRequest(api.SubscribeAgents, nil), func(a api.Answer) error { ch <- a; return nil })
		}()
		h.wantAgent(next(t, ch, "a snapshot", func(a api.Answer) bool { return a.Name == api.AnswerAgents }), tt.who+"'s snapshot", w.Terminal, said, tt.sees)
		stop()
	}
	snap, _ := h.app.Subscribe(ctx)
	for _, a := range snap.Agents {
		if a.Terminal == w.Terminal && a.Environment == "main" && a.Message != said {
			t.Errorf("the app's own face's snapshot: %+v, want the message", a)
		}
	}
}

// wantAgent checks that the Agents answer a lists agent n of main, needs_input as it reported,
// with its message said when sees, and without a word of it otherwise.
func (h *harness) wantAgent(a api.Answer, what string, n int, said string, sees bool) {
	h.t.Helper()
	var agents []api.Agent
	if err := a.Decode(api.AnswerAgents, &agents); err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
	for _, ag := range agents {
		if ag.Environment != "main" || ag.Terminal != n {
			continue
		}
		if ag.State != api.StateNeedsInput || ag.StateFrom != api.StateFromReported || (ag.Message == said) != sees || strings.Contains(string(a.Body), "rm -rf") != sees {
			h.t.Errorf("%s: %s; want needs_input from reported, the message %v", what, a.Body, sees)
		}
		return
	}
	h.t.Errorf("%s lists no main:%d: %s", what, n, a.Body)
}
