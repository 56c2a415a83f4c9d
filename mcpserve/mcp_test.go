package mcpserve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/extension"
	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/tcptest"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/local"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// harness is the real app on a tmux server of its own, behind a real bus, with a lead as
// terminal main:1; krad mcp runs as the programs are built (testbin).
type harness struct {
	t      testing.TB
	bin    string
	served *apptest.Served
	socket string
	home   string
}

func start(t testing.TB, opts ...func(*app.Config)) *harness {
	t.Helper()
	testbin.Need(t, "tmux", "tmux")
	h := &harness{t: t, bin: testbin.Dir(t)}
	dir := t.TempDir()
	h.socket, h.home = filepath.Join(dir, "tmux.sock"), dir
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + tmp, "SHELL=/bin/sh", "TERM=xterm-256color", "LANG=C.UTF-8"}
	ln, err := local.ListenLoopback("")
	if err != nil {
		t.Fatal(err)
	}
	cfg := app.Config{
		BinDir:     h.bin,
		Path:       "/usr/local/bin:/usr/bin:/bin",
		Tmux:       app.TmuxConfig{SocketPath: h.socket, ConfigFile: "/dev/null", Env: env},
		Quiet:      500 * time.Millisecond,
		Reaction:   5 * time.Second,
		PasteDelay: 50 * time.Millisecond,
		Terminals:  []app.TerminalSpec{{Title: "lead", Lead: true}},
	}
	for _, o := range opts {
		o(&cfg)
	}
	h.served = apptest.ServeApp(t, ln, cfg, local.Config{})
	t.Cleanup(func() {
		h.served.Stop(t)
		_ = exec.Command("tmux", "-S", h.socket, "kill-server").Run()
	})
	return h
}

// env is the variables of terminal (like "main:1") as the app sets them; "" is a program outside
// the app's terminals that found the bus through KRAD_ADE_ENDPOINT.
func (h *harness) env(terminal string) []string {
	e := []string{"PATH=" + h.bin + ":/usr/bin:/bin", "HOME=" + h.home,
		api.VarEndpoint + "=" + h.served.Bus.Addr(), api.VarToken + "=" + h.served.Token.Reveal()}
	if terminal != "" {
		e = append(e, api.VarTerminal+"="+terminal)
	}
	return e
}

// server is one krad mcp, driven by the SDK's own client.
type server struct {
	cmd      *exec.Cmd
	session  *mcp.ClientSession
	stderr   *apptest.Buffer
	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
}

// connect starts krad mcp with env as the SDK's client does and connects to it.
func (h *harness) connect(env []string, args ...string) (*server, error) {
	h.t.Helper()
	s := &server{stderr: &apptest.Buffer{}}
	s.cmd = exec.Command(filepath.Join(h.bin, "krad"), append([]string{"mcp", "--progress-every", "200ms"}, args...)...)
	s.cmd.Env = env
	s.cmd.Stderr = s.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			s.mu.Lock()
			s.progress = append(s.progress, r.Params)
			s.mu.Unlock()
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	s.session, err = client.Connect(ctx, &mcp.CommandTransport{Command: s.cmd, TerminateDuration: 20 * time.Second}, nil)
	if err != nil {
		return s, err
	}
	h.t.Cleanup(func() { _ = s.session.Close() })
	return s, nil
}

func (h *harness) mustConnect(terminal string) *server {
	h.t.Helper()
	s, err := h.connect(h.env(terminal))
	if err != nil {
		h.t.Fatalf("connect to krad mcp as %q: %v; its stderr: %s", terminal, err, s.stderr)
	}
	return s
}

func (s *server) tools(t *testing.T) []string {
	t.Helper()
	res, err := s.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s has no description or no input schema", tool.Name)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names) // the SDK lists them sorted
	return names
}

// call calls a tool and fails the test on a protocol error; a tool error is the result's.
func (s *server) call(t testing.TB, ctx context.Context, name string, args any, progress bool) *mcp.CallToolResult {
	t.Helper()
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	if progress {
		p.SetProgressToken("tok-" + name)
	}
	res, err := s.session.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// ok calls a tool that must succeed, and decodes its structured result into v.
func (s *server) ok(t *testing.T, name string, args any, v any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := s.call(t, ctx, name, args, false)
	text := textOf(res)
	if res.IsError {
		t.Fatalf("%s: an error: %s", name, text)
	}
	if v != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, b, err)
		}
	}
	return text
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

var (
	leadTools   = []string{"list_agents", "check_agent", "wait_for_agent", "read_screen", "send_text", "spawn_worker", "close_worker", "close_session", "report_state", "create_worktree", "changes", "list_groups", "sync_group", "push_group", "open_in_editor", "run_variants", "pick_variant"}
	directing   = []string{"send_text", "spawn_worker", "close_worker", "close_session", "run_variants", "pick_variant", "push_group"}
	clientTools = []string{"list_agents"}
)

type agentOut struct {
	Agent api.Agent `json:"agent"`
}

// spawn spawns a worker through the lead's krad mcp.
func spawn(t *testing.T, lead *server, title string, command ...string) api.Agent {
	t.Helper()
	var out agentOut
	text := lead.ok(t, "spawn_worker", map[string]any{"title": title, "command": command}, &out)
	if out.Agent.Role != api.RoleWorker || out.Agent.Title != title || !strings.Contains(text, "worker '"+title+"'") {
		t.Fatalf("spawn_worker: %+v, text %q", out.Agent, text)
	}
	return out.Agent
}

// TestToolsFollowRights: a lead is offered every tool; a terminal that is not a lead only those
// that do not direct workers; a program outside the app's terminals only list_agents. And the
// bus agrees: what is not offered, it refuses.
func TestToolsFollowRights(t *testing.T) {
	h := start(t)
	lead := h.mustConnect("main:1")
	slices.Sort(leadTools)
	if got := lead.tools(t); !slices.Equal(got, leadTools) {
		t.Errorf("the lead's tools: %v, want %v", got, leadTools)
	}
	w := spawn(t, lead, "plain", "sh", "-c", "sleep 300")

	plain := h.mustConnect(fmt.Sprintf("main:%d", w.Terminal))
	var want []string
	for _, n := range leadTools {
		if !slices.Contains(directing, n) {
			want = append(want, n)
		}
	}
	if got := plain.tools(t); !slices.Equal(got, want) {
		t.Errorf("a worker's tools: %v, want %v", got, want)
	}
	// It can look, as a terminal may.
	var agents struct{ Agents []api.Agent }
	if text := plain.ok(t, "list_agents", map[string]any{"all": true}, &agents); len(agents.Agents) != 2 || !strings.Contains(text, "TERMINAL") {
		t.Errorf("list_agents as the worker: %+v, text %q", agents, text)
	}
	// A tool it was not offered is unknown to its server.
	if _, err := plain.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "spawn_worker", Arguments: map[string]any{"command": []string{"sh"}}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("spawn_worker as a worker: %v, want unknown tool", err)
	}

	client := h.mustConnect("")
	if got := client.tools(t); !slices.Equal(got, clientTools) {
		t.Errorf("a Client's tools: %v, want %v", got, clientTools)
	}
	if text := client.ok(t, "list_agents", nil, &agents); len(agents.Agents) != 2 || !strings.Contains(text, "main:1") {
		t.Errorf("list_agents as Client: %+v, text %q", agents, text)
	}
}

// TestLeadDirectsAWorker: through krad mcp a lead spawns a worker, sends it text, waits for it
// with progress notifications, reads what it answered, and closes it.
func TestLeadDirectsAWorker(t *testing.T) {
	h := start(t)
	lead := h.mustConnect("main:1")
	w := spawn(t, lead, "echo", "sh", "-c", `while read line; do sleep 2; echo "got: $line"; done`)
	target := map[string]any{"terminal": w.Terminal}

	if text := lead.ok(t, "send_text", map[string]any{"terminal": w.Terminal, "text": "hello there"}, nil); text != "ok" {
		t.Errorf("send_text: %q", text)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := lead.call(t, ctx, "wait_for_agent", map[string]any{"terminal": w.Terminal, "timeout_secs": 60}, true)
	var got agentOut
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &got); err != nil || res.IsError || got.Agent.State != api.StateIdle {
		t.Fatalf("wait_for_agent: %s %s (%v), want the worker idle", b, textOf(res), err)
	}
	if want := fmt.Sprintf("main:%d worker 'echo' idle", w.Terminal); textOf(res) != want {
		t.Errorf("wait_for_agent's text: %q, want %q", textOf(res), want)
	}
	lead.mu.Lock()
	progress := slices.Clone(lead.progress)
	lead.mu.Unlock()
	if len(progress) == 0 {
		t.Error("wait_for_agent sent no progress notification in its 2 s of waiting")
	}
	for _, p := range progress {
		if p.ProgressToken != "tok-wait_for_agent" || p.Total != 60 || !strings.Contains(p.Message, fmt.Sprintf("waiting for main:%d", w.Terminal)) {
			t.Errorf("progress %+v", p)
		}
	}

	// check_agent with a wait reports progress too, while nothing changes.
	lead.mu.Lock()
	lead.progress = nil
	lead.mu.Unlock()
	res = lead.call(t, ctx, "check_agent", map[string]any{"terminal": w.Terminal, "wait_secs": 2}, true)
	if res.IsError {
		t.Fatalf("check_agent with a wait: %s", textOf(res))
	}
	lead.mu.Lock()
	progress = slices.Clone(lead.progress)
	lead.mu.Unlock()
	if len(progress) == 0 || progress[0].ProgressToken != "tok-check_agent" || progress[0].Total != 2 {
		t.Errorf("check_agent with a wait of 2 s: progress %+v, want notifications with its token", progress)
	}

	var screen api.Screen
	lead.ok(t, "read_screen", target, &screen)
	if !strings.Contains(screen.Text, "got: hello there") || screen.Terminal != w.Terminal {
		t.Errorf("read_screen: %+v, want the worker's answer", screen)
	}
	lead.ok(t, "close_worker", target, nil)
	var agents struct{ Agents []api.Agent }
	lead.ok(t, "list_agents", map[string]any{"all": true}, &agents)
	for _, a := range agents.Agents {
		if a.Terminal == w.Terminal {
			t.Errorf("after close_worker, list_agents still shows %+v", a)
		}
	}
}

// busConns is how many connections the bus holds open at its port: established, or closed by
// the client but not yet by the bus (CLOSE_WAIT).
func (h *harness) busConns() int {
	_, port, _ := net.SplitHostPort(h.served.Bus.Addr())
	return tcptest.Count(h.t, port, tcptest.Established) + tcptest.Count(h.t, port, tcptest.CloseWait)
}

// eventually waits up to 20 s for ok.
func eventually(ok func() bool) bool {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ok() {
			return true
		}
	}
	return ok()
}

// waitingWorker spawns a worker that stays working, and starts a wait_for_agent on it; it
// returns once the bus holds the Wait's connection, with the call's result to come.
func waitingWorker(t *testing.T, h *harness, lead *server, ctx context.Context) <-chan error {
	t.Helper()
	w := spawn(t, lead, "busy", "sh", "-c", "krad report working; sleep 300")
	var a agentOut
	lead.ok(t, "check_agent", map[string]any{"terminal": w.Terminal, "wait_secs": 5}, &a)
	if !eventually(func() bool { return h.busConns() == 0 }) {
		t.Fatalf("the bus holds %d connections before the wait", h.busConns())
	}
	done := make(chan error, 1)
	go func() {
		_, err := lead.session.CallTool(ctx, &mcp.CallToolParams{Name: "wait_for_agent", Arguments: map[string]any{"terminal": w.Terminal, "timeout_secs": 600}})
		done <- err
	}()
	if !eventually(func() bool { return h.busConns() == 1 }) {
		t.Fatalf("the wait never reached the bus: it holds %d connections", h.busConns())
	}
	return done
}

// TestCancelledWait: a wait the client cancels ends: krad mcp closes its connection, and the bus,
// seeing it leave, ends the Wait and closes its own end.
func TestCancelledWait(t *testing.T) {
	h := start(t)
	lead := h.mustConnect("main:1")
	ctx, cancel := context.WithCancel(context.Background())
	done := waitingWorker(t, h, lead, ctx)
	time.Sleep(500 * time.Millisecond) // a wait that runs a while
	cancel()
	if err := <-done; err == nil {
		t.Error("the cancelled call returned no error")
	}
	if !eventually(func() bool { return h.busConns() == 0 }) {
		t.Errorf("20 s after the cancel, the bus still holds %d connections", h.busConns())
	}
	// The server goes on serving.
	var agents struct{ Agents []api.Agent }
	lead.ok(t, "list_agents", nil, &agents)
}

// TestStdinClosedMidCall: a client that dies (its end of krad mcp's stdin closed) while a wait
// runs: krad mcp exits on its own, with 0, and the bus ends the Wait. (The SDK client's own Close
// waits for its calls to end first, so the test closes the pipe itself, as a dying client does.)
func TestStdinClosedMidCall(t *testing.T) {
	h := start(t)
	cmd := exec.Command(filepath.Join(h.bin, "krad"), "mcp")
	cmd.Env = h.env("main:1")
	stderr := &apptest.Buffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	session, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, stderr)
	}
	waitingWorker(t, h, &server{session: session, stderr: stderr}, context.Background())

	stdin.Close()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("krad mcp after its stdin closed: %v, want exit 0; stderr: %s", err, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("krad mcp still runs 20 s after its stdin closed, its wait with it")
	}
	if !eventually(func() bool { return h.busConns() == 0 }) {
		t.Errorf("20 s after krad mcp exited, the bus still holds %d connections", h.busConns())
	}
}

// TestBusErrorIsToolError: the bus's refusal is a tool result with isError and the lines krad
// prints (error and hint), not a protocol error; input the bus would refuse is refused the same
// way before it goes out.
func TestBusErrorIsToolError(t *testing.T) {
	h := start(t)
	lead := h.mustConnect("main:1")
	ctx := context.Background()
	res := lead.call(t, ctx, "read_screen", map[string]any{"terminal": 99}, false)
	text := textOf(res)
	if !res.IsError || !strings.Contains(text, "krad: error: Read: the app answered not_found") || !strings.Contains(text, "krad: hint: krad list --all shows the terminals of this environment") {
		t.Errorf("read_screen of no terminal: isError %v, %q; want krad's error and hint", res.IsError, text)
	}
	res = lead.call(t, ctx, "spawn_worker", map[string]any{"title": "two\nlines", "command": []string{"sh"}}, false)
	if text := textOf(res); !res.IsError || !strings.Contains(text, "krad: error: bad_request: Spawn: ") || !strings.Contains(text, "krad: hint: the tool's description and input schema") {
		t.Errorf("spawn_worker with a newline in its title: isError %v, %q", res.IsError, text)
	}
	// Arguments that fail the schema are the SDK's tool error.
	res = lead.call(t, ctx, "read_screen", map[string]any{"terminal": "two"}, false)
	if !res.IsError {
		t.Errorf("read_screen with a string for terminal: %q, want an error", textOf(res))
	}
	// The app stops: the next call says so, with the hint to start it.
	h.served.Stop(t)
	res = lead.call(t, ctx, "list_agents", nil, false)
	if text := textOf(res); !res.IsError || !strings.Contains(text, "krad: error: no agents bus answers at "+h.served.Bus.Addr()) || !strings.Contains(text, "krad: hint: start krad-ade") {
		t.Errorf("list_agents with the app stopped: isError %v, %q", res.IsError, text)
	}
	if strings.Contains(lead.stderr.String()+text, h.served.Token.Reveal()) {
		t.Error("the token is in krad mcp's output")
	}
}

// TestOutsideTheApp: krad mcp with no bus to find exits 2 at once, saying how to start the app,
// before it answers any client.
func TestOutsideTheApp(t *testing.T) {
	h := &harness{t: t, bin: testbin.Dir(t), home: t.TempDir()}
	s, err := h.connect([]string{"PATH=/usr/bin:/bin", "HOME=" + h.home, "XDG_CONFIG_HOME=" + filepath.Join(h.home, "config")})
	if err == nil {
		t.Fatal("krad mcp outside the app accepted a client")
	}
	_ = s.cmd.Wait()
	if s.cmd.ProcessState == nil || s.cmd.ProcessState.ExitCode() != 2 {
		t.Errorf("exit %v, want 2", s.cmd.ProcessState)
	}
	if got := s.stderr.String(); !strings.Contains(got, "krad: error: no agents API found") || !strings.Contains(got, "krad: hint: start krad-ade") {
		t.Errorf("stderr %q, want krad's error and the hint to start krad-ade", got)
	}
}

// TestExtensionToolsThroughTheBus: krad mcp offers the tools of the extensions lent to its
// terminal's environment, the SDK's everything server here, as <extension>_<tool>, and a call
// runs the server in the app and gives back its result; an extension not lent to main is not
// offered.
func TestExtensionToolsThroughTheBus(t *testing.T) {
	everything := testbin.Everything(t)
	h := start(t, func(c *app.Config) {
		c.Extensions = extension.Config{Extensions: []extension.Spec{
			{Name: "everything", Command: []string{everything}},
			{Name: "hostonly", Command: []string{everything}, Environments: []string{"build"}},
		}}
	})
	s := h.mustConnect("main:1")
	tools := s.tools(t)
	if !slices.Contains(tools, "everything_greet") || slices.ContainsFunc(tools, func(n string) bool { return strings.HasPrefix(n, "hostonly_") }) {
		t.Errorf("tools %v: want everything_greet, and nothing of hostonly", tools)
	}
	if text := s.ok(t, "everything_greet", map[string]any{"name": "Ada"}, nil); text != "Hi Ada" {
		t.Errorf("everything_greet answered %q, want Hi Ada", text)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if res := s.call(t, ctx, "everything_greet", map[string]any{"name": 5}, false); !res.IsError {
		t.Errorf("everything_greet with a number for name: %s, want an error", textOf(res))
	}
}

// TestOpenInEditor: open_in_editor opens a file of the environment's folder in the person's
// editor (here a script that records what it was asked), at its line; a file outside the folder
// is refused as the bus refuses it, and nothing is opened.
func TestOpenInEditor(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(t.TempDir(), "opened")
	editor := filepath.Join(t.TempDir(), "editor")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" >> \""+record+"\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "retry.go")
	if err := os.WriteFile(file, []byte("package retry\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := start(t, func(c *app.Config) {
		c.Dir = dir
		c.Editor = app.Editor{Command: []string{editor, "--goto", "{file}:{line}"}}
	})
	lead := h.mustConnect("main:1")
	lead.ok(t, "open_in_editor", map[string]any{"path": file, "line": 3, "wait": true}, nil)
	if got, _ := os.ReadFile(record); string(got) != "--goto\n"+file+":3\n" {
		t.Errorf("the editor was asked for %q, want --goto %s:3", got, file)
	}
	res := lead.call(t, context.Background(), "open_in_editor", map[string]any{"path": "/etc/passwd"}, false)
	if text := textOf(res); !res.IsError || !strings.Contains(text, "forbidden") {
		t.Errorf("open_in_editor of /etc/passwd: isError %v, %q; want forbidden", res.IsError, text)
	}
	if got, _ := os.ReadFile(record); strings.Count(string(got), "\n") != 2 {
		t.Errorf("the editor was started again: %q", got)
	}
}
