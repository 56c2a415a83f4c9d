package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
)

// nextAgentEvent waits up to 30 s for an agent event on ch that matches.
func nextAgentEvent(t *testing.T, ch <-chan app.Event, match func(api.AgentEvent) bool) api.AgentEvent {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("the subscription closed")
			}
			if ev.Agent != nil && match(*ev.Agent) {
				return *ev.Agent
			}
		case <-deadline:
			t.Fatal("no such event within 30 s")
		}
	}
}

// The app's own face subscribes in the process and sees what the bus's subscribers see: a
// snapshot, then every change; a lead it opens is a lead on the bus (it may spawn), and it closes
// terminals.
func TestSubscribeOpenLeadClose(t *testing.T) {
	h := start(t)
	<-h.app.Ready()
	ctx, cancel := context.WithCancel(context.Background())
	snap, events := h.app.Subscribe(ctx)
	if len(snap.Environments) != 1 || snap.Environments[0].Name != "main" || !snap.Environments[0].Up {
		t.Errorf("snapshot's environments: got %+v, want main up", snap.Environments)
	}
	if len(snap.Agents) != 1 || snap.Agents[0].Role != api.RoleShell {
		t.Errorf("snapshot's agents: got %+v, want the one shell", snap.Agents)
	}

	lead, err := h.app.OpenLead(ctx, app.TerminalSpec{Title: "named", Command: "sleep 300", Lead: true})
	if err != nil {
		t.Fatal(err)
	}
	if lead.Role != api.RoleLead || lead.Session != lead.ID().String() || lead.Title != "named" {
		t.Errorf("OpenLead: got %+v, want a lead of its own session titled named", lead)
	}
	nextAgentEvent(t, events, func(e api.AgentEvent) bool { return e.Kind == api.AgentAdded && e.Agent.Terminal == lead.Terminal })
	// Its rights on the bus are a lead's: it spawns.
	worker := h.agent(h.as(lead.Terminal), api.Spawn, &api.SpawnBody{Title: "w", Command: []string{"sleep", "300"}})
	added := nextAgentEvent(t, events, func(e api.AgentEvent) bool { return e.Kind == api.AgentAdded && e.Agent.Terminal == worker.Terminal })
	if added.Agent.Session != lead.Session {
		t.Errorf("the worker's session: got %q, want %q", added.Agent.Session, lead.Session)
	}

	if err := h.app.CloseTerminal(ctx, worker.ID()); err != nil {
		t.Fatal(err)
	}
	nextAgentEvent(t, events, func(e api.AgentEvent) bool { return e.Kind == api.AgentRemoved && e.Agent.Terminal == worker.Terminal })
	if err := h.app.CloseTerminal(ctx, worker.ID()); err == nil || !strings.Contains(err.Error(), "no terminal") {
		t.Errorf("closing it again: got %v, want no terminal", err)
	}

	// CloseSession closes the lead's workers, not the lead.
	w2 := h.agent(h.as(lead.Terminal), api.Spawn, &api.SpawnBody{Title: "w2", Command: []string{"sleep", "300"}})
	if err := h.app.CloseSession(ctx, lead.ID()); err != nil {
		t.Fatal(err)
	}
	nextAgentEvent(t, events, func(e api.AgentEvent) bool { return e.Kind == api.AgentRemoved && e.Agent.Terminal == w2.Terminal })
	if got := h.agent(h.as(lead.Terminal), api.Check, &api.CheckBody{Target: api.Target(lead.Terminal)}); got.Role != api.RoleLead {
		t.Errorf("after CloseSession the lead is %+v", got)
	}

	cmd, ok := h.app.AttachCommand(lead.ID())
	if want := "attach -t " + lead.ID().String(); !ok || !strings.HasSuffix(cmd, want) {
		t.Errorf("AttachCommand: got %q, want one that ends %q", cmd, want)
	}

	cancel()
	select {
	case _, ok := <-events:
		for ok {
			_, ok = <-events
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the subscription's channel stayed open after its context ended")
	}
}
