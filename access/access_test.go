package access

import (
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
)

// TestDecide covers every role × every request of the spec, written out by hand from the spec's
// caller table rather than derived from the code under test.
func TestDecide(t *testing.T) {
	const (
		F = Forbid
		A = Allow
		W = AllowOwnWorker
	)
	//                         Client Terminal Lead Git
	table := map[api.Name][4]Verdict{
		api.Hello:           {A, A, A, F},
		api.List:            {A, A, A, F},
		api.ListAll:         {A, A, A, F},
		api.SubscribeAgents: {A, A, A, F},
		api.Check:           {F, A, A, F},
		api.Wait:            {F, A, A, F},
		api.Read:            {F, A, A, F},
		api.Send:            {F, F, W, F},
		api.Spawn:           {F, F, A, F},
		api.Close:           {F, F, W, F},
		api.CloseSession:    {F, F, A, F},
		api.CreateWorktree:  {F, A, A, F},
		api.Changes:         {F, A, A, F},
		api.RunVariants:     {F, F, A, F},
		api.PickVariant:     {F, F, A, F},
		api.Code:            {F, A, A, F},
		api.ExtensionTool:   {F, A, A, F},
		api.Askpass:         {F, F, F, A},
		api.Report:          {F, A, A, F},
		api.Groups:          {F, A, A, F},
		api.RetireGroup:     {F, A, A, F},
		api.SyncGroup:       {F, A, A, F},
		api.PushGroup:       {F, F, A, F},
		api.MCP:             {F, A, A, F},
	}
	if len(table) != len(api.Names) {
		t.Fatalf("the table covers %d requests, the API has %d", len(table), len(api.Names))
	}
	roles := []Role{RoleClient, RoleTerminal, RoleLead, RoleGit}
	for _, name := range api.Names {
		want, ok := table[name]
		if !ok {
			t.Errorf("request %s is missing from the table", name)
			continue
		}
		for i, role := range roles {
			got := Decide(role, name)
			if got.Verdict != want[i] {
				t.Errorf("Decide(%s, %s) = %v, want %v", role, name, got.Verdict, want[i])
			}
			if got.Verdict != Allow && got.Why == "" {
				t.Errorf("Decide(%s, %s) says no reason", role, name)
			}
		}
	}
	if d := Decide(Role(0), api.Hello); d.Verdict != Forbid {
		t.Errorf("an unknown role got %v, want Forbid", d.Verdict)
	}
}

// TestTerminalRole: a terminal calls with a lead's rights when the app lists it as a session's
// lead, and with a terminal's otherwise (the spec's "the same, when terminal N is a session's
// lead chat").
func TestTerminalRole(t *testing.T) {
	for agent, want := range map[api.Role]Role{
		api.RoleLead:   RoleLead,
		api.RoleShell:  RoleTerminal,
		api.RoleWorker: RoleTerminal,
		"":             RoleTerminal,
		"Lead":         RoleTerminal,
	} {
		if got := TerminalRole(agent); got != want {
			t.Errorf("TerminalRole(%q) = %s, want %s", agent, got, want)
		}
	}
}

// TestAdmit: which callers a connection may name, by where it came from, written out by hand
// from the design's rule (a host's forward speaks for its own environment only).
func TestAdmit(t *testing.T) {
	term := func(env string, n int) api.Caller {
		return api.FromTerminal(api.TerminalID{Environment: env, Terminal: n})
	}
	lead := api.Caller{Kind: api.CallerLead, Terminal: api.TerminalID{Environment: "build", Terminal: 1}}
	git := func(env string) api.Caller { return api.Caller{Kind: api.CallerGit, Environment: env} }
	build := FromForward("build")
	for _, c := range []struct {
		origin Origin
		from   api.Caller
		want   Verdict
	}{
		// This computer: any caller (the API does not guard against the user's own processes).
		{Loopback, api.FromClient, Allow},
		{Loopback, term("main", 1), Allow},
		{Loopback, term("build", 3), Allow},
		{Loopback, lead, Allow},
		{Loopback, git("main"), Allow},
		// build's forward: build's terminals and Git caller, nothing else.
		{build, term("build", 3), Allow},
		{build, git("build"), Allow},
		{build, term("main", 1), Forbid},
		{build, term("other", 1), Forbid},
		{build, term("build-2", 1), Forbid},
		{build, git("main"), Forbid},
		{build, lead, Forbid},
		{build, api.FromClient, Forbid},
		{build, api.Caller{}, Forbid},
		// No known origin (a Pipe whose caller forgot to say): no caller at all.
		{Origin{}, api.FromClient, Forbid},
		{Origin{}, term("main", 1), Forbid},
		{Origin{}, term("build", 3), Forbid},
		{Origin{}, lead, Forbid},
		{Origin{}, git("main"), Forbid},
	} {
		d := Admit(c.origin, c.from)
		if d.Verdict != c.want {
			t.Errorf("Admit(%s, %s) = %v, want %v", c.origin, c.from, d.Verdict, c.want)
		}
		if d.Verdict != Allow && c.origin == build && !strings.Contains(d.Why, "forward of SSH environment build") {
			t.Errorf("Admit(%s, %s) says %q, which does not name the forward", c.origin, c.from, d.Why)
		}
	}
}

// TestFromForwardNeedsAName: the origin of a forward without an environment's name is a
// programming error, not the loopback's full rights.
func TestFromForwardNeedsAName(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("FromForward(\"\") did not panic")
		}
	}()
	o := FromForward("")
	t.Errorf("FromForward(\"\") = %s", o)
}

// TestAgentFor: an agent's message, which the agent wrote, reaches a terminal caller of its own
// environment (a lead's included) and no one else; ids, titles and states reach every caller.
func TestAgentFor(t *testing.T) {
	ag := api.Agent{Environment: "build", Terminal: 3, Title: "claude", State: api.StateNeedsInput, StateFrom: api.StateFromReported,
		Message: "Claude needs your permission to use Bash"}
	for _, tt := range []struct {
		from api.Caller
		sees bool
	}{
		{api.FromClient, false},
		{api.FromTerminal(api.TerminalID{Environment: "build", Terminal: 1}), true},
		{api.Caller{Kind: api.CallerLead, Terminal: api.TerminalID{Environment: "build", Terminal: 1}}, true},
		{api.FromTerminal(api.TerminalID{Environment: "main", Terminal: 1}), false},
		{api.Caller{Kind: api.CallerLead, Terminal: api.TerminalID{Environment: "main", Terminal: 1}}, false},
		{api.Caller{Kind: api.CallerGit, Environment: "build"}, false},
		{api.Caller{}, false},
	} {
		got := AgentFor(tt.from, ag)
		want := ag
		if !tt.sees {
			want.Message = ""
		}
		if got != want {
			t.Errorf("%s: %+v, want %+v", tt.from, got, want)
		}
	}
}
