package app_test

import (
	"context"
	"encoding/json"
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
	t.Parallel()
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

// nextAppEvent waits up to 30 s for an app event of kind on ch, and returns the whole event.
func nextAppEvent(t *testing.T, ch <-chan app.Event, kind string) app.Event {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("the subscription closed")
			}
			if ev.App != nil && ev.App.Kind == kind {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s event within 30 s", kind)
		}
	}
}

// The face learns what an environment's row needs from the process's own events: an SSH
// environment added while the app runs comes with its ssh host (which the bus's event does not
// carry), a fresh snapshot names it with its host, and once removed a snapshot no longer has it.
func TestSubscribeEnvironmentAddedAndRemoved(t *testing.T) {
	t.Parallel()
	h := start(t)
	<-h.app.Ready()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, events := h.app.Subscribe(ctx)
	host := h.extraHost("", "")
	if err := h.app.AddEnvironment(app.Remote{Name: "extra", Host: host, SSH: "buildbox"}, nil); err != nil {
		t.Fatal(err)
	}
	ev := nextAppEvent(t, events, api.EnvironmentAdded)
	if ev.Environment == nil || ev.Environment.Name != "extra" || ev.Environment.SSH != "buildbox" {
		t.Errorf("environment_added carries %+v, want extra on ssh buildbox", ev.Environment)
	}
	if b, err := json.Marshal(ev.App); err == nil && strings.Contains(string(b), "buildbox") {
		t.Errorf("the bus's event grew the host: %s", b)
	}
	snap, _ := h.app.Subscribe(ctx)
	if n := len(snap.Environments); n != 2 || snap.Environments[1].Name != "extra" || snap.Environments[1].SSH != "buildbox" || snap.Environments[0].SSH != "" {
		t.Errorf("the snapshot's environments after the add: %+v", snap.Environments)
	}
	if err := h.app.RemoveEnvironment(ctx, "extra"); err != nil {
		t.Fatal(err)
	}
	nextAppEvent(t, events, api.EnvironmentRemoved)
	if snap, _ := h.app.Subscribe(ctx); len(snap.Environments) != 1 || snap.Environments[0].Name != "main" {
		t.Errorf("the snapshot's environments after the removal: %+v", snap.Environments)
	}
}
