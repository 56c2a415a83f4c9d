package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// TestLeadOfAnAgentProfile: a configured lead that names an agent profile with a kind runs the
// profile's command with that kind's hooks, so that it tells its own state (idle, reported, once
// its session starts), under the profile's name; the app started again adopts it rather than
// open a second one (its key, in the window's options, names the profile). A lead the app's face opens with a profile it lacks is bad_request, naming
// those there are, and opens nothing.
func TestLeadOfAnAgentProfile(t *testing.T) {
	t.Parallel()
	agents := testbin.FakeAgents(t)
	opts := []option{
		withTerminals(app.TerminalSpec{Agent: "c", Lead: true}),
		withAgents(app.AgentProfile{Name: "c", Command: agents + "/claude", Kind: "claude"}),
		quiet(200 * time.Millisecond),
	}
	h := start(t, opts...)
	reported := func() api.Agent {
		t.Helper()
		var a api.Agent
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			list := h.agents(h.as(0))
			if len(list) != 1 {
				t.Fatalf("agents: %+v, want the lead alone", list)
			}
			if a = list[0]; a.StateFrom == api.StateFromReported {
				return a
			}
		}
		t.Fatalf("the lead never reported: %+v", a)
		return a
	}
	if a := reported(); a.Role != api.RoleLead || a.Title != "c" || a.State != api.StateIdle {
		t.Errorf("the lead: %+v, want lead c, idle", a)
	}
	h.stop()
	h.start(testbin.Dir(t), opts...)
	if list := h.agents(h.as(0)); len(list) != 1 || list[0].Terminal != 1 || list[0].Title != "c" || list[0].Role != api.RoleLead {
		t.Errorf("after the restart: %+v, want main:1 adopted, alone", list)
	}

	_, err := h.app.OpenLead(t.Context(), app.TerminalSpec{Agent: "nope", Lead: true})
	if code(err) != api.CodeBadRequest || err == nil || !strings.Contains(err.Error(), "no agent nope: the agents are c") {
		t.Errorf("OpenLead of an unknown profile: %v", err)
	}
	if list := h.agents(h.as(0)); len(list) != 1 {
		t.Errorf("agents after it: %+v", list)
	}
}
