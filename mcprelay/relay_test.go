package mcprelay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/local"
	"github.com/krad-ade/krad/mcprelay"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// harness is the real app on a tmux server of its own, behind a real bus, with a lead as
// terminal main:1, and the relay serving its MCP request, as krad-ade wires them.
type harness struct {
	t      testing.TB
	bin    string
	served *apptest.Served
	relay  *mcprelay.Relay
	log    *apptest.Buffer // the relay's log
	home   string
}

func start(t testing.TB) *harness {
	t.Helper()
	testbin.Need(t, "tmux", "tmux")
	h := &harness{t: t, bin: testbin.Dir(t), home: t.TempDir(), log: &apptest.Buffer{}}
	socket := filepath.Join(h.home, "tmux.sock")
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + h.home, "SHELL=/bin/sh", "TERM=xterm-256color", "LANG=C.UTF-8"}
	ln, err := local.ListenLoopback("")
	if err != nil {
		t.Fatal(err)
	}
	token, err := api.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	var bus atomic.Pointer[local.Server]
	h.relay = mcprelay.New(mcprelay.Config{
		Dial:     func(ctx context.Context, o access.Origin) (net.Conn, error) { return bus.Load().Pipe(ctx, o) },
		Endpoint: ln.Addr().String(),
		Token:    token,
		Logger:   slog.New(slog.NewTextHandler(h.log, nil)),
	})
	h.served = apptest.ServeApp(t, ln, app.Config{
		BinDir:    h.bin,
		Path:      "/usr/local/bin:/usr/bin:/bin",
		Tmux:      app.TmuxConfig{SocketPath: socket, ConfigFile: "/dev/null", Env: env},
		Quiet:     500 * time.Millisecond,
		Terminals: []app.TerminalSpec{{Title: "lead", Lead: true}},
		MCP:       h.relay,
	}, local.Config{BusToken: token})
	bus.Store(h.served.Bus)
	t.Cleanup(func() {
		h.relay.Close()
		h.served.Stop(t)
		_ = exec.Command("tmux", "-S", socket, "kill-server").Run()
	})
	return h
}

// static is the static krad for this machine, as the app installs it on hosts: it links no MCP
// server.
func (h *harness) static() string {
	return filepath.Join(h.bin, "krad-linux-"+runtime.GOARCH)
}

// env is the variables of terminal (like "main:1") as the app sets them.
func (h *harness) env(terminal string) []string {
	return h.envVia(terminal, h.served.Bus.Addr())
}

// envVia is env with the bus reached at endpoint: a proxy's, between the terminal and the bus.
func (h *harness) envVia(terminal, endpoint string) []string {
	return []string{"PATH=" + h.bin + ":/usr/bin:/bin", "HOME=" + h.home,
		api.VarEndpoint + "=" + endpoint, api.VarToken + "=" + h.served.Token.Reveal(), api.VarTerminal + "=" + terminal}
}

// connect starts program's krad mcp with env as an agent's CLI does, and connects the SDK's
// client to it, counting the progress notifications it gets in progress.
func (h *harness) connect(program string, env []string, progress *atomic.Int32) (*mcp.ClientSession, *exec.Cmd, *apptest.Buffer, error) {
	h.t.Helper()
	cmd := exec.Command(program, "mcp")
	cmd.Env = env
	stderr := &apptest.Buffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, nil)
	if err != nil {
		return nil, cmd, stderr, err
	}
	h.t.Cleanup(func() { _ = session.Close() })
	return session, cmd, stderr, nil
}

func toolNames(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	res, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestStaticKradMCP: the static krad's krad mcp, which links no MCP server, serves a lead the
// very tools krad's own does, through the app; a tool's result and its text are the same; a wait
// sends progress through the relay as it waits; and when the client leaves, it exits 0.
func TestStaticKradMCP(t *testing.T) {
	h := start(t)
	var ownNotes, notes atomic.Int32
	own, _, _, err := h.connect(filepath.Join(h.bin, "krad"), h.env("main:1"), &ownNotes)
	if err != nil {
		t.Fatal(err)
	}
	relayed, cmd, stderr, err := h.connect(h.static(), h.env("main:1"), &notes)
	if err != nil {
		t.Fatalf("connect to the static krad's krad mcp: %v; its stderr: %s", err, stderr)
	}
	want := toolNames(t, own)
	if got := toolNames(t, relayed); !slices.Equal(got, want) || !slices.Contains(got, "spawn_worker") {
		t.Errorf("the static krad's tools: %v, want krad's own: %v", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	call := func(s *mcp.ClientSession, p *mcp.CallToolParams) *mcp.CallToolResult {
		t.Helper()
		res, err := s.CallTool(ctx, p)
		if err != nil {
			t.Fatalf("tools/call %s: %v", p.Name, err)
		}
		return res
	}
	var worker struct{ Agent api.Agent }
	res := call(relayed, &mcp.CallToolParams{Name: "spawn_worker", Arguments: map[string]any{"title": "sleeper", "command": []string{"sh", "-c", "krad report working; sleep 300"}}})
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &worker); err != nil || res.IsError || worker.Agent.Role != api.RoleWorker {
		t.Fatalf("spawn_worker through the relay: %s %q", b, textOf(res))
	}
	all := &mcp.CallToolParams{Name: "list_agents", Arguments: map[string]any{"all": true}}
	// Both listings once the states stay: the worker's own report has landed (its state reported
	// from then on) and the lead is no longer starting (it is idle after its quiet spell).
	settled := func(list string) bool {
		return strings.Contains(list, "reported") && !strings.Contains(list, "starting")
	}
	for deadline := time.Now().Add(30 * time.Second); !settled(textOf(call(own, all))); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker's own report did not land, or the lead is still starting, 30 s on: %q", textOf(call(own, all)))
		}
	}
	if a, b := textOf(call(own, all)), textOf(call(relayed, all)); a != b || !strings.Contains(b, "sleeper") {
		t.Errorf("list_agents: through the relay %q, krad's own %q", b, a)
	}

	// A wait with a progress token: the notifications come through the relay while it waits.
	p := &mcp.CallToolParams{Name: "check_agent", Arguments: map[string]any{"terminal": worker.Agent.Terminal, "wait_secs": 7}}
	p.SetProgressToken("tok")
	if res := call(relayed, p); res.IsError {
		t.Fatalf("check_agent with a wait: %q", textOf(res))
	}
	if notes.Load() == 0 {
		t.Error("check_agent waited 7 s through the relay, and no progress notification came")
	}

	relayed.Close()
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the static krad's krad mcp exited %d when its client left, want 0; stderr %q", code, stderr)
	}
}

// TestErrorsAsKrad: the static krad's krad mcp, where krad's own fails (a terminal the app does
// not have), fails the same way: the same answer of the app's on stderr (to the MCP request that
// carries it, rather than to the Check krad's own makes first), the same exit code.
func TestErrorsAsKrad(t *testing.T) {
	h := start(t)
	run := func(program string) (string, int) {
		cmd := exec.Command(program, "mcp")
		cmd.Env = h.env("main:9")
		cmd.Stdin = strings.NewReader("")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		_ = cmd.Run()
		return stderr.String(), cmd.ProcessState.ExitCode()
	}
	wantErr, wantCode := run(filepath.Join(h.bin, "krad"))
	gotErr, gotCode := run(h.static())
	_, want, _ := strings.Cut(wantErr, "the app answered")
	_, got, _ := strings.Cut(gotErr, "the app answered")
	if got != want || gotCode != wantCode || wantCode == 0 || !strings.HasPrefix(gotErr, "krad: error: MCP: the app answered forbidden: ") {
		t.Errorf("the static krad's krad mcp as main:9: exit %d, %q; want krad's own: exit %d, %q", gotCode, gotErr, wantCode, wantErr)
	}
}

// mcpCall makes one MCP request as from, through origin's way into the bus.
func (h *harness) mcpCall(from api.TerminalID, origin access.Origin, body *api.MCPBody) (api.MCPAnswer, error) {
	h.t.Helper()
	c := &api.Client{Endpoint: h.served.Bus.Addr(), Token: h.served.Token, From: api.FromTerminal(from),
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) { return h.served.Bus.Pipe(ctx, origin) }}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	a, err := c.Call(ctx, api.NewRequest(api.MCP, body))
	if err != nil {
		return api.MCPAnswer{}, err
	}
	var ans api.MCPAnswer
	return ans, a.Decode(api.AnswerMCP, &ans)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"

// TestBytesCounted: the relay's two directions are counted in bytes: input sent again (its
// answer lost) is taken once, and output the host did not say it got is sent again, the same,
// until it does.
func TestBytesCounted(t *testing.T) {
	h := start(t)
	lead := api.TerminalID{Environment: app.Local, Terminal: 1}
	open, err := h.mcpCall(lead, access.Loopback, &api.MCPBody{In: []byte(initialize)})
	if err != nil || open.Session == "" || open.Taken != int64(len(initialize)) {
		t.Fatalf("open with the initialize request: %+v, %v", open, err)
	}
	again, err := h.mcpCall(lead, access.Loopback, &api.MCPBody{Session: open.Session, In: []byte(initialize)})
	if err != nil || again.Taken != open.Taken {
		t.Fatalf("the same input again: %+v, %v; want it taken once (%d bytes)", again, err, open.Taken)
	}
	var out []byte
	for len(out) == 0 || out[len(out)-1] != '\n' {
		a, err := h.mcpCall(lead, access.Loopback, &api.MCPBody{Session: open.Session, InAt: open.Taken, Got: int64(len(out))})
		if err != nil || a.OutAt != int64(len(out)) {
			t.Fatalf("poll: %+v, %v", a, err)
		}
		out = append(out, a.Out...)
	}
	var reply struct {
		ID     int `json:"id"`
		Result struct {
			ServerInfo struct{ Name string } `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out, &reply); err != nil || reply.ID != 1 || reply.Result.ServerInfo.Name != "krad" {
		t.Fatalf("the output %q is not krad mcp's one answer to initialize (%v)", out, err)
	}
	// Not acknowledged: the same bytes again, from the same byte.
	a, err := h.mcpCall(lead, access.Loopback, &api.MCPBody{Session: open.Session, InAt: open.Taken, Got: 0})
	if err != nil || a.OutAt != 0 || !bytes.Equal(a.Out, out) {
		t.Errorf("output not acknowledged: %+v, %v; want %q again", a, err, out)
	}
	// Acknowledged, and the input ended: krad mcp exits 0, and the last answer says so.
	for deadline := time.Now().Add(20 * time.Second); ; {
		a, err = h.mcpCall(lead, access.Loopback, &api.MCPBody{Session: open.Session, InAt: open.Taken, Got: int64(len(out)), End: true})
		if err != nil || a.Done || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || !a.Done || a.Exit != 0 || len(a.Out) != 0 {
		t.Errorf("after the end of input: %+v, %v; want done, exit 0", a, err)
	}
	// Counts that do not agree are refused.
	if _, err := h.mcpCall(lead, access.Loopback, &api.MCPBody{Session: open.Session, InAt: open.Taken + 5}); !isCode(err, api.CodeBadRequest) {
		t.Errorf("input from past what was taken: %v, want bad_request", err)
	}
}

func isCode(err error, code api.ErrorCode) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Code == code
}

// TestSessionIsTheCallers: a session is its opener's: another terminal, or the same one by
// another way into the bus, is told there is no such session; a Client may not open one (the
// spec's Client calls only list and watch); a terminal holds a bounded number.
func TestSessionIsTheCallers(t *testing.T) {
	h := start(t)
	lead := api.TerminalID{Environment: app.Local, Terminal: 1}
	open, err := h.mcpCall(lead, access.Loopback, &api.MCPBody{})
	if err != nil {
		t.Fatal(err)
	}
	var worker api.Agent
	c := &api.Client{Endpoint: h.served.Bus.Addr(), Token: h.served.Token, From: api.FromTerminal(lead)}
	a, err := c.Call(context.Background(), api.NewRequest(api.Spawn, &api.SpawnBody{Title: "other", Command: []string{"sleep", "300"}}))
	if err != nil || a.Decode(api.AnswerAgent, &worker) != nil {
		t.Fatalf("spawn: %v", err)
	}
	if _, err := h.mcpCall(worker.ID(), access.Loopback, &api.MCPBody{Session: open.Session}); !isCode(err, api.CodeNotFound) {
		t.Errorf("another terminal naming the session: %v, want not_found", err)
	}
	if _, err := h.mcpCall(lead, access.FromForward(app.Local), &api.MCPBody{Session: open.Session}); !isCode(err, api.CodeNotFound) {
		t.Errorf("the same terminal by another way in: %v, want not_found", err)
	}
	if _, err := h.mcpCall(lead, access.Loopback, &api.MCPBody{Session: open.Session}); err != nil {
		t.Errorf("the opener: %v", err)
	}
	c.From = api.FromClient
	if _, err := c.Call(context.Background(), api.NewRequest(api.MCP, &api.MCPBody{})); !isCode(err, api.CodeForbidden) {
		t.Errorf("a Client opening a session: %v, want forbidden", err)
	}
	for i := 1; i < mcprelay.MaxPerTerminal; i++ {
		if _, err := h.mcpCall(lead, access.Loopback, &api.MCPBody{}); err != nil {
			t.Fatalf("session %d: %v", i+1, err)
		}
	}
	if _, err := h.mcpCall(lead, access.Loopback, &api.MCPBody{}); !isCode(err, api.CodeConflict) {
		t.Errorf("session %d of one terminal: %v, want conflict", mcprelay.MaxPerTerminal+1, err)
	}
}

// cutProxy forwards TCP connections from a loopback port to the bus, and can be cut (its
// listener and every connection closed, so that the port refuses) and restored on the same port:
// what a host's forward does while the app reconnects.
type cutProxy struct {
	t      testing.TB
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newCutProxy(t testing.TB, target string) *cutProxy {
	p := &cutProxy{t: t, target: target}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp4", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.(*net.TCPConn).CloseWrite() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *cutProxy) restore() {
	ln, err := net.Listen("tcp4", p.addr)
	if err != nil {
		p.t.Fatalf("listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

// TestRelayRidesOutACut: the link to the app goes away under a running krad mcp of the static
// krad (its endpoint refuses, as a host's forward does while the app reconnects) and comes back:
// a tool call made meanwhile is answered once it is back, and the session goes on.
func TestRelayRidesOutACut(t *testing.T) {
	h := start(t)
	proxy := newCutProxy(t, h.served.Bus.Addr())
	env := h.envVia("main:1", proxy.addr)
	var notes atomic.Int32
	s, _, stderr, err := h.connect(h.static(), env, &notes)
	if err != nil {
		t.Fatalf("connect: %v; %s", err, stderr)
	}
	if got := toolNames(t, s); !slices.Contains(got, "list_agents") {
		t.Fatalf("tools %v", got)
	}
	proxy.cut()
	answered := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_agents"})
		if err != nil {
			t.Errorf("list_agents across the cut: %v; stderr %s", err, stderr)
		}
		answered <- res
	}()
	select {
	case res := <-answered:
		t.Fatalf("list_agents answered while the link was cut: %+v", res)
	case <-time.After(2 * time.Second):
	}
	proxy.restore()
	select {
	case res := <-answered:
		if res == nil || res.IsError || !strings.Contains(textOf(res), "main:1") {
			t.Errorf("list_agents after the link came back: %+v", res)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("list_agents not answered 30 s after the link came back; stderr %s", stderr)
	}
}

// heldProxy forwards TCP connections from a loopback port to the bus, and holds the answer of the
// first one until it is released: a slow link, on which the app's answer is still on its way.
// With drop, it never forwards that answer: it closes the connection once the answer came, a
// link lost after the app answered.
type heldProxy struct {
	addr       string
	drop       bool
	answered   chan struct{} // closed when the first answer's first bytes reached the proxy
	release    chan struct{}
	firstEnded chan struct{} // closed when krad closed the first connection
	mu         sync.Mutex
	conns      int
}

func newHeldProxy(t testing.TB, target string, drop bool) *heldProxy {
	p := &heldProxy{drop: drop, answered: make(chan struct{}), release: make(chan struct{}), firstEnded: make(chan struct{})}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p.addr = ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			up, err := net.Dial("tcp4", target)
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { up.Close() })
			p.mu.Lock()
			p.conns++
			first := p.conns == 1
			p.mu.Unlock()
			go func() {
				_, _ = io.Copy(up, c)
				if first {
					close(p.firstEnded)
				}
				_ = up.(*net.TCPConn).CloseWrite()
			}()
			go func() {
				if first {
					b := make([]byte, 64<<10)
					n, _ := up.Read(b)
					close(p.answered)
					if p.drop {
						c.Close()
						up.Close()
						return
					}
					<-p.release
					_, _ = c.Write(b[:n])
				}
				_, _ = io.Copy(c, up)
				c.Close()
			}()
		}
	}()
	return p
}

// TestOpenIsNotCutShort: an agent's CLI writes its first request as soon as krad mcp starts,
// while the request that opens the session may still be on its way back over a slow link. The
// static krad waits for that answer, rather than cutting the request short and opening a second
// session (the first, unknown to it, would run on for api.MCPIdle and count against the
// terminal's four).
func TestOpenIsNotCutShort(t *testing.T) {
	h := start(t)
	proxy := newHeldProxy(t, h.served.Bus.Addr(), false)
	m := h.startStatic(proxy.addr)
	select {
	case <-proxy.answered:
	case <-time.After(30 * time.Second):
		t.Fatalf("the app did not answer krad mcp's first request within 30 s; its stderr %q", m.stderr.String())
	}
	m.write(initialize)
	select {
	case <-proxy.firstEnded:
		t.Errorf("krad mcp cut short the request that opens its session when its first input came")
	case <-time.After(2 * time.Second):
	}
	close(proxy.release)
	m.waitFor(`"id":1`)
	m.end()
	h.wantOpened(1)
}

// TestOpenAgain: a request that opens a session, made again with the same open id because its
// answer was lost, finds the session it opened, its input taken once; the same id from another
// terminal, or from the same one by another way in, opens a session of its own.
func TestOpenAgain(t *testing.T) {
	h := start(t)
	lead := api.TerminalID{Environment: app.Local, Terminal: 1}
	tok, err := api.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	body := func() *api.MCPBody { return &api.MCPBody{Open: tok.Reveal(), In: []byte(initialize)} }
	first, err := h.mcpCall(lead, access.Loopback, body())
	if err != nil || first.Session == "" {
		t.Fatalf("open: %+v, %v", first, err)
	}
	again, err := h.mcpCall(lead, access.Loopback, body())
	if err != nil || again.Session != first.Session || again.Taken != int64(len(initialize)) {
		t.Errorf("the same open again: %+v, %v; want session %s, its input taken once (%d bytes)", again, err, first.Session, len(initialize))
	}
	var worker api.Agent
	c := &api.Client{Endpoint: h.served.Bus.Addr(), Token: h.served.Token, From: api.FromTerminal(lead)}
	a, err := c.Call(context.Background(), api.NewRequest(api.Spawn, &api.SpawnBody{Title: "other", Command: []string{"sleep", "300"}}))
	if err != nil || a.Decode(api.AnswerAgent, &worker) != nil {
		t.Fatalf("spawn: %v", err)
	}
	if other, err := h.mcpCall(worker.ID(), access.Loopback, body()); err != nil || other.Session == first.Session {
		t.Errorf("another terminal with the same open id: %+v, %v; want a session of its own", other, err)
	}
	if other, err := h.mcpCall(lead, access.FromForward(app.Local), body()); err != nil || other.Session == first.Session {
		t.Errorf("the same terminal by another way in, with the same open id: %+v, %v; want a session of its own", other, err)
	}
	h.wantOpened(3) // the lead's once
}

// TestOpenAnswerLost: the link goes after the app opened the static krad's session, before its
// answer came back; krad makes the request again, and goes on in the session the app opened.
func TestOpenAnswerLost(t *testing.T) {
	h := start(t)
	proxy := newHeldProxy(t, h.served.Bus.Addr(), true)
	m := h.startStatic(proxy.addr)
	m.write(initialize)
	m.waitFor(`"id":1`)
	m.end()
	h.wantOpened(1)
}

// staticMCP is the static krad's krad mcp, run as an agent's CLI runs it: its stdin a pipe the
// test writes to.
type staticMCP struct {
	t              testing.TB
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	stdout, stderr apptest.Buffer
}

// startStatic starts the static krad's krad mcp as terminal main:1, with the bus at endpoint.
func (h *harness) startStatic(endpoint string) *staticMCP {
	h.t.Helper()
	m := &staticMCP{t: h.t, cmd: exec.Command(h.static(), "mcp")}
	m.cmd.Env = h.envVia("main:1", endpoint)
	m.cmd.Stdout, m.cmd.Stderr = &m.stdout, &m.stderr
	var err error
	if m.stdin, err = m.cmd.StdinPipe(); err != nil {
		h.t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = m.cmd.Process.Kill(); _ = m.cmd.Wait() })
	return m
}

func (m *staticMCP) write(s string) {
	m.t.Helper()
	if _, err := io.WriteString(m.stdin, s); err != nil {
		m.t.Fatal(err)
	}
}

// waitFor waits up to 30 s for its output to hold want.
func (m *staticMCP) waitFor(want string) {
	m.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(m.stdout.String(), want); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			m.t.Fatalf("krad mcp did not print %s within 30 s; stdout %q, stderr %q", want, m.stdout.String(), m.stderr.String())
		}
	}
}

// end ends its input, and wants it to exit 0.
func (m *staticMCP) end() {
	m.t.Helper()
	m.stdin.Close()
	if err := m.cmd.Wait(); err != nil {
		m.t.Errorf("krad mcp at the end of its input: %v; stderr %q", err, m.stderr.String())
	}
}

// wantOpened wants the relay to have opened n sessions.
func (h *harness) wantOpened(n int) {
	h.t.Helper()
	if got := strings.Count(h.log.String(), "krad mcp session opened"); got != n {
		h.t.Errorf("the app opened %d krad mcp sessions, want %d; its log:\n%s", got, n, h.log)
	}
}
