package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/cmd/krad/cli"
)

// Config is what the server needs from the CLI that runs it: what krad mcp gives it (who it calls
// as, how, and how krad says things), and the extensions' tools.
type Config struct {
	cli.MCPConfig
	// Extensions, when set, adds the tools of the extensions the caller may use.
	Extensions Extensions
}

// Extensions is the hook for tools beyond the bus's own requests: the tools of the person's MCP
// servers that the app lends through ExtensionTool. The server offers each as
// "<extension>_<tool>" (a name that does not fit MCP's tool names, or that another tool has, is
// left out), to a caller the access table lets make ExtensionTool.
type Extensions interface {
	// Tools lists the tools of every extension the caller may use. It is asked once, when the
	// server starts; an error leaves the extensions' tools out, and the bus's own tools serve.
	Tools(ctx context.Context) ([]ExtensionTool, error)
	// Call calls one tool of one extension with the arguments the client gave, as they came.
	// Its error is shown to the model as krad shows it (Config.Explain); an extension's own
	// failure is a result with IsError set.
	Call(ctx context.Context, extension, tool string, arguments json.RawMessage) (*mcp.CallToolResult, error)
}

// ExtensionTool is one tool of one extension, as the extension lists it (its Name unprefixed).
type ExtensionTool struct {
	Extension string
	Tool      *mcp.Tool
}

// Server is the MCP server of one krad mcp.
type Server struct {
	cfg   Config
	role  access.Role
	srv   *mcp.Server
	tools []string
}

// New makes the server of cfg. It learns the caller's role first, the one request it makes before
// a client asks anything: a terminal's own agent says whether it is a session's lead. Its error is
// Call's (no bus answers, say), for the CLI to print.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Progress <= 0 {
		cfg.Progress = 5 * time.Second
	}
	s := &Server{cfg: cfg}
	role, err := s.learnRole(ctx)
	if err != nil {
		return nil, err
	}
	s.role = role
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "krad", Title: "krad-ade agents bus", Version: cfg.Version},
		&mcp.ServerOptions{Instructions: s.instructions()})
	for _, t := range busTools() {
		if !s.allowed(t.request) {
			continue
		}
		t.add(s)
		s.tools = append(s.tools, t.name)
	}
	if cfg.Extensions != nil && s.allowed(api.ExtensionTool) {
		s.addExtensions(ctx)
	}
	return s, nil
}

// learnRole is the caller's role for the access table: Client, or a terminal that is a lead or
// not, as its own agent says.
func (s *Server) learnRole(ctx context.Context) (access.Role, error) {
	switch s.cfg.Caller.Kind {
	case api.CallerClient:
		if _, err := s.cfg.Call(ctx, api.NewRequest(api.Hello, nil)); err != nil {
			return 0, err
		}
		return access.RoleClient, nil
	case api.CallerTerminal:
	default:
		return 0, fmt.Errorf("krad mcp calls as a terminal or as Client, not as %s", s.cfg.Caller.Kind)
	}
	self := api.Target(s.cfg.Caller.Terminal.Terminal)
	a, err := s.cfg.Call(ctx, api.NewRequest(api.Check, &api.CheckBody{Target: self}))
	if err != nil {
		return 0, err
	}
	var agent api.Agent
	if err := a.Decode(api.AnswerAgent, &agent); err != nil {
		return 0, fmt.Errorf("Check of this terminal: %w", err)
	}
	return access.TerminalRole(agent.Role), nil
}

// allowed says whether the caller may make req, by the access table; a request the app does not
// serve (no answer is defined for it) is not offered either.
func (s *Server) allowed(req api.Name) bool {
	if req != api.ExtensionTool && req.Answer() == "" {
		return false
	}
	return access.Decide(s.role, req).Verdict != access.Forbid
}

// Tools are the names of the tools the server offers, in the order it lists them.
func (s *Server) Tools() []string { return append([]string(nil), s.tools...) }

// Run serves one client on r and w (krad mcp's stdin and stdout) until the client closes r or ctx
// is done. Calls still running then are cancelled, which closes their connections to the bus.
//
// Every request's context ends when the input ends or ctx does: a call still running when its
// client goes away closes its connection to the bus itself, which cancels it in the app, however
// long the process takes to exit after Run returns.
func (s *Server) Run(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	life, end := context.WithCancel(ctx)
	defer end()
	s.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			stop := context.AfterFunc(life, cancel)
			defer stop()
			return next(ctx, method, req)
		}
	})
	err := s.srv.Run(life, &mcp.IOTransport{Reader: &endingReader{ReadCloser: r, end: end}, Writer: w})
	if errors.Is(err, io.EOF) || life.Err() != nil {
		return nil
	}
	return err
}

// endingReader calls end once its reader fails or ends: the client went away.
type endingReader struct {
	io.ReadCloser
	end func()
}

func (r *endingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if err != nil {
		r.end()
	}
	return n, err
}

// instructions is what the server tells the client's model about itself.
func (s *Server) instructions() string {
	who := "a program outside the app's terminals: you may only list the agents"
	switch s.role {
	case access.RoleLead:
		who = fmt.Sprintf("terminal %s, the lead of a session: you may spawn workers, send them text, wait for them, read their screens and close them", s.cfg.Caller.Terminal)
	case access.RoleTerminal:
		who = fmt.Sprintf("terminal %s, which is not a session's lead: you may look at the agents of your environment, but not direct workers", s.cfg.Caller.Terminal)
	}
	return "krad is the agents bus of krad-ade, the app that runs coding agents in terminals (tmux windows) " +
		"on this computer and on SSH hosts. You call it as " + who + ". A terminal is named by its number " +
		"in your environment (2 for main:2), as list_agents shows it. To hand work to a worker: spawn_worker " +
		"with a prompt, then wait_for_agent, then read_screen (or changes for what it changed in its group)."
}

// validToolName says whether name is what MCP allows a tool's name to be: 1 to 128 of A-Z,
// a-z, 0-9, _, - and .
func validToolName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for _, c := range []byte(name) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// addExtensions adds the extensions' tools as "<extension>_<tool>".
func (s *Server) addExtensions(ctx context.Context) {
	tools, err := s.cfg.Extensions.Tools(ctx)
	if err != nil {
		return // no extension's tool, and the bus's own tools serve (see Extensions.Tools)
	}
	taken := map[string]bool{}
	for _, n := range s.tools {
		taken[n] = true
	}
	for _, et := range tools {
		if et.Tool == nil {
			continue
		}
		name := et.Extension + "_" + et.Tool.Name
		if taken[name] || !validToolName(name) || et.Tool.InputSchema == nil {
			continue
		}
		taken[name] = true
		t := *et.Tool
		t.Name = name
		ext, tool := et.Extension, et.Tool.Name
		s.srv.AddTool(&t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := s.cfg.Extensions.Call(ctx, ext, tool, req.Params.Arguments)
			if err != nil {
				return s.errorResult(err), nil
			}
			return res, nil
		})
		s.tools = append(s.tools, name)
	}
}

// errorResult is a tool result for err, with isError set and the lines krad prints for it.
func (s *Server) errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: s.cfg.Explain(err)}}}
}

// shown is an error whose text is what krad prints for it: the typed tool handlers' error, which
// the SDK makes a result with isError set and this text.
type shown struct {
	text string
	err  error
}

func (e *shown) Error() string { return e.text }

func (e *shown) Unwrap() error { return e.err }
