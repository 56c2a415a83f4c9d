package bridge_test

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/apitest"
)

// TestHostSpeaksForItsEnvironmentOnly: a process on the SSH host reads the token file there (as
// it may), connects to the forward on the host's loopback and names this computer's lead, the
// Lead caller (even with the real lead token, which no host ever gets), "Client", or this
// computer's Git caller: every request is refused with forbidden, and nothing changes on this
// computer — no worker spawned, nothing typed, no screen read, no terminal closed. The host's own
// terminals are served as before, and see their environment only.
func TestHostSpeaksForItsEnvironmentOnly(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	vars := w.bridge.Vars()
	hostToken, err := os.ReadFile(vars.TokenFile) // what any process of the host user can read
	if err != nil {
		t.Fatal(err)
	}
	tok, err := api.ParseToken(strings.TrimSpace(string(hostToken)))
	if err != nil {
		t.Fatal(err)
	}
	// The connection is opened by the host's sshd, as the host's user, to the forward on the
	// host's loopback: the path any program on the host takes.
	host := w.sshd.Dial(t)
	defer host.Close()
	call := func(tok api.Token, from api.Caller, req api.Request) string {
		t.Helper()
		conn, err := host.Dial("tcp", vars.Endpoint)
		if err != nil {
			t.Fatalf("dial the forward on the host: %v", err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		line, _ := json.Marshal(api.Envelope{APIVersion: api.Version, Token: tok, From: from, Request: req})
		if _, err := conn.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
		got, _ := bufio.NewReader(conn).ReadString('\n')
		return got
	}

	local := &api.Client{Endpoint: w.bus.Addr(), Token: w.token, From: api.FromTerminal(api.TerminalID{Environment: app.Local, Terminal: 1})}
	var before []api.Agent
	w.call(local, api.ListAll, nil, &before)
	if len(before) == 0 || before[0].Role != api.RoleLead {
		t.Fatalf("main:1 is not the local lead: %+v", before)
	}

	mainLead := api.TerminalID{Environment: app.Local, Terminal: 1}
	forbidden := "forward of SSH environment build"
	for _, c := range []struct {
		tok  api.Token
		from api.Caller
		code api.ErrorCode
		says string
	}{
		{tok, api.FromTerminal(mainLead), api.CodeForbidden, forbidden},
		// The token is checked before the caller: the bus token is no lead token.
		{tok, api.Caller{Kind: api.CallerLead, Terminal: mainLead}, api.CodeUnauthorized, "only a lead the user named"},
		{w.lead, api.Caller{Kind: api.CallerLead, Terminal: mainLead}, api.CodeForbidden, forbidden},
		{w.lead, api.Caller{Kind: api.CallerLead, Terminal: api.TerminalID{Environment: "build", Terminal: 1}}, api.CodeForbidden, forbidden},
		{tok, api.FromClient, api.CodeForbidden, forbidden},
		{tok, api.Caller{Kind: api.CallerGit, Environment: app.Local}, api.CodeForbidden, forbidden},
	} {
		for _, req := range apitest.Requests(1) {
			got := call(c.tok, c.from, req)
			var a api.Answer
			if err := json.Unmarshal([]byte(got), &a); err != nil {
				t.Fatalf("%s %s: answer %q: %v", c.from, req.Name, got, err)
			}
			e, _ := a.Err().(*api.Error)
			if e == nil || e.Code != c.code || !strings.Contains(e.Message, c.says) {
				t.Errorf("%s %s from the host: %s, want %s saying %q", c.from, req.Name, strings.TrimSpace(got), c.code, c.says)
			}
		}
	}

	var after []api.Agent
	w.call(local, api.ListAll, nil, &after)
	if len(after) != len(before) {
		t.Errorf("main had %d terminals before the host's requests and %d after: %+v", len(before), len(after), after)
	}
	for i := range min(len(before), len(after)) {
		if after[i].Terminal != before[i].Terminal || api.Ended(after[i].State) {
			t.Errorf("main's terminals changed: before %+v, after %+v", before[i], after[i])
		}
	}
	var screen api.Screen
	w.call(local, api.Read, &api.ReadBody{Target: 1}, &screen)
	if strings.Contains(screen.Text, "from apitest") {
		t.Errorf("the host typed into main:1:\n%s", screen.Text)
	}

	// The host's own lead is served, and sees its own environment only.
	got := call(tok, api.FromTerminal(api.TerminalID{Environment: "build", Terminal: 1}), api.NewRequest(api.ListAll, nil))
	var a api.Answer
	var agents []api.Agent
	if err := json.Unmarshal([]byte(got), &a); err != nil || a.Decode("Agents", &agents) != nil {
		t.Fatalf("ListAll as build:1 from the host: %s", got)
	}
	for _, ag := range agents {
		if ag.Environment != "build" {
			t.Errorf("build:1 sees %s from the host", ag.ID())
		}
	}
	if len(agents) == 0 {
		t.Error("build:1 sees no agents from the host")
	}
}
