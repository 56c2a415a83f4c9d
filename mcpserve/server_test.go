package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/cmd/krad/cli"
)

// recorder stands where the bus is, for tests of what reaches it: it answers the Check of the
// caller's own terminal with an agent of the role it is given, and everything else with
// not_found, and keeps every request.
type recorder struct {
	role api.Role
	mu   sync.Mutex
	got  []api.Request
}

func (r *recorder) call(_ context.Context, req api.Request) (api.Answer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, req)
	if b, ok := req.Body.(*api.CheckBody); ok && b.Target == 1 && len(r.got) == 1 {
		return api.NewAnswer(api.AnswerAgent, api.Agent{Environment: "main", Terminal: 1, Role: r.role, State: api.StateIdle})
	}
	if req.Name == api.Hello {
		return api.NewAnswer(api.AnswerHello, api.HelloAnswer{APIVersion: 1, Build: "test"})
	}
	e := api.Errorf(api.CodeNotFound, "no such terminal")
	return api.ErrorAnswer(e), e
}

func (r *recorder) requests() []api.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// session serves a Server of cfg in the test's process and connects the SDK's client to it.
func session(t testing.TB, cfg Config) (*Server, *mcp.ClientSession) {
	t.Helper()
	cfg.Explain = func(err error) string { return "krad: error: " + err.Error() }
	cfg.Show = func(req api.Request, a api.Answer) string { return string(a.Name) }
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	ss, err := s.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close(); cancel() })
	return s, cs
}

// tracker is an extension with one tool, as the app would list it through ExtensionTool.
type tracker struct {
	mu   sync.Mutex
	args []string
}

func (tr *tracker) Tools(context.Context) ([]ExtensionTool, error) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}}
	return []ExtensionTool{
		{Extension: "tracker", Tool: &mcp.Tool{Name: "create_issue", Description: "file an issue", InputSchema: schema}},
		{Extension: "tracker", Tool: &mcp.Tool{Name: "bad name", Description: "not a tool name MCP allows", InputSchema: schema}},
	}, nil
}

func (tr *tracker) Call(_ context.Context, ext, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	tr.mu.Lock()
	tr.args = append(tr.args, ext+" "+tool+" "+string(args))
	tr.mu.Unlock()
	if strings.Contains(string(args), "down") {
		return nil, errors.New("ExtensionTool: the app answered unavailable")
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "filed #7"}}}, nil
}

// TestExtensionTools: the hook's tools are offered as <extension>_<tool> to a terminal, lead or
// not, never to a Client; a call reaches the extension with the client's arguments as they came,
// and its error is a tool error with krad's words.
func TestExtensionTools(t *testing.T) {
	for _, tt := range []struct {
		caller api.Caller
		role   api.Role
		want   bool
	}{
		{api.FromTerminal(api.TerminalID{Environment: "main", Terminal: 1}), api.RoleLead, true},
		{api.FromTerminal(api.TerminalID{Environment: "main", Terminal: 1}), api.RoleShell, true},
		{api.FromClient, "", false},
	} {
		tr := &tracker{}
		rec := &recorder{role: tt.role}
		s, cs := session(t, Config{MCPConfig: cli.MCPConfig{Caller: tt.caller, Call: rec.call}, Extensions: tr})
		if got := slices.Contains(s.Tools(), "tracker_create_issue"); got != tt.want {
			t.Errorf("%s %s: tracker_create_issue offered %v, want %v (tools %v)", tt.caller, tt.role, got, tt.want, s.Tools())
		}
		if slices.ContainsFunc(s.Tools(), func(n string) bool { return strings.Contains(n, " ") }) {
			t.Errorf("a tool name MCP does not allow was offered: %v", s.Tools())
		}
		if !tt.want {
			continue
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tracker_create_issue", Arguments: map[string]any{"title": "flaky"}})
		if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "filed #7" {
			t.Errorf("tracker_create_issue: %+v, %v", res, err)
		}
		res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tracker_create_issue", Arguments: map[string]any{"title": "down"}})
		if err != nil || !res.IsError || res.Content[0].(*mcp.TextContent).Text != "krad: error: ExtensionTool: the app answered unavailable" {
			t.Errorf("tracker_create_issue, the app refusing: %+v, %v", res, err)
		}
		if want := []string{`tracker create_issue {"title":"flaky"}`, `tracker create_issue {"title":"down"}`}; !slices.Equal(tr.args, want) {
			t.Errorf("the extension got %q, want %q", tr.args, want)
		}
	}
}

// FuzzToolArguments: whatever arguments a model sends to whichever tool, the server neither
// fails nor sends the bus a request the bus would refuse as malformed: such input is a tool
// error before it goes out.
func FuzzToolArguments(f *testing.F) {
	for _, seed := range []struct {
		tool int
		args string
	}{
		{0, `{}`}, {1, `{"terminal":2,"wait_secs":5}`}, {3, `{"terminal":0}`},
		{4, `{"terminal":2,"text":"a\u0000b"}`}, {5, `{"title":"two\nlines","command":["sh"]}`},
		{5, `{"command":["a\u0000"]}`}, {10, `{"terminal":2,"group":""}`}, {12, `{"title":"t","prompt":"p","agents":[{"count":9,"agent":"a"}]}`},
		{13, `{"group":"g","how":"rebase"}`}, {8, `{"state":"sleeping"}`}, {2, `{"terminal":-1,"timeout_secs":1}`},
	} {
		f.Add(seed.tool, []byte(seed.args))
	}
	rec := &recorder{role: api.RoleLead}
	s, cs := session(f, Config{MCPConfig: cli.MCPConfig{Caller: api.FromTerminal(api.TerminalID{Environment: "main", Terminal: 1}), Call: rec.call}})
	tools := s.Tools()
	f.Fuzz(func(t *testing.T, i int, args []byte) {
		if !json.Valid(args) {
			return // the SDK's to refuse, before any tool sees it
		}
		name := tools[((i%len(tools))+len(tools))%len(tools)]
		before := len(rec.requests())
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s %s: a protocol error: %v", name, args, err)
		}
		if !res.IsError { // the recorder answers not_found to everything
			t.Fatalf("%s %s: no error", name, args)
		}
		for _, r := range rec.requests()[before:] {
			if err := check(r); err != nil {
				t.Fatalf("%s %s: the bus was sent %s, which it refuses: %v", name, args, r.Name, err)
			}
		}
	})
}
