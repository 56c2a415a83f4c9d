package extension_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/extension"
	"github.com/krad-ade/krad/kradtest/proctest"
	"github.com/krad-ade/krad/kradtest/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// Rogue is a shell script that speaks just enough MCP to be started (initialize, tools/list with
// one tool, "huge"), and answers tools/call with a text of $ROGUE_SIZE bytes. Its stderr line says
// it started, with its pid.
const rogue = `#!/bin/sh
echo "rogue $$ up" >&2
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  [ -z "$id" ] && continue
  case "$line" in
  *'"method":"initialize"'*)
    v=$(printf '%s' "$line" | sed -n 's/.*"protocolVersion":"\([^"]*\)".*/\1/p')
    printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"%s","capabilities":{"tools":{}},"serverInfo":{"name":"rogue","version":"1"}}}\n' "$id" "$v";;
  *'"method":"tools/list"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"huge","inputSchema":{"type":"object"}}]}}\n' "$id";;
  *'"method":"tools/call"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' "$id"
    head -c "$ROGUE_SIZE" /dev/zero | tr '\0' '<'
    printf '"}]}}\n';;
  *)
    printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no such method"}}\n' "$id";;
  esac
done
`

func script(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

func handle(t *testing.T, s *extension.Supervisor, env string, b api.ExtensionToolBody) (api.ExtensionAnswer, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return s.Handle(ctx, env, &b)
}

func code(err error) api.ErrorCode {
	var e *api.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func texts(r *api.ToolResult) string {
	var out []string
	for _, c := range r.Content {
		var tc struct{ Type, Text string }
		if json.Unmarshal(c, &tc) == nil && tc.Type == "text" {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n")
}

// TestEverything: the SDK's everything server as an extension: its tool list, a call with
// content, one with structured content; a tool it does not have is not_found with its tools;
// arguments that fail the tool's schema are refused; an environment it is not lent to is
// forbidden, and an extension config.toml does not name is not_found.
func TestEverything(t *testing.T) {
	s := extension.New(extension.Config{Extensions: []extension.Spec{
		{Name: "everything", Command: []string{testbin.Everything(t)}, Environments: []string{"main", "build"}},
	}})
	defer s.Close()

	for env, want := range map[string]string{"build": "[everything]", "laptop2": "[]"} {
		ans, err := handle(t, s, env, api.ExtensionToolBody{})
		if err != nil || ans.Extensions == nil || fmt.Sprint(*ans.Extensions) != want {
			t.Errorf("the extensions lent to %s: %+v, %v; want %s", env, ans, err, want)
		}
	}
	ans, err := handle(t, s, "main", api.ExtensionToolBody{Extension: "everything"})
	if err != nil {
		t.Fatal(err)
	}
	var greet *api.ToolInfo
	for i, tool := range ans.Tools {
		if tool.Name == "greet" {
			greet = &ans.Tools[i]
		}
	}
	if ans.Extension != "everything" || greet == nil || greet.Description != "say hi" || !strings.Contains(string(greet.InputSchema), `"name"`) {
		t.Fatalf("tool list %+v: want everything's, with greet (say hi) taking a name", ans)
	}

	ans, err = handle(t, s, "build", api.ExtensionToolBody{Extension: "everything", Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if err != nil || ans.Result == nil || texts(ans.Result) != "Hi Ada" || ans.Result.IsError {
		t.Fatalf("greet Ada from build: %+v, %v; want the text Hi Ada", ans, err)
	}
	ans, err = handle(t, s, "main", api.ExtensionToolBody{Extension: "everything", Tool: "greet (structured)", Arguments: json.RawMessage(`{"name":"Bo"}`)})
	if err != nil || ans.Result == nil || string(ans.Result.StructuredContent) != `{"message":"Hi Bo"}` {
		t.Fatalf("greet (structured): %+v, %v; want structured content {\"message\":\"Hi Bo\"}", ans, err)
	}

	_, err = handle(t, s, "main", api.ExtensionToolBody{Extension: "everything", Tool: "nope"})
	if code(err) != api.CodeNotFound || !strings.Contains(err.Error(), "its tools: elicit (form), elicit (url), greet, ") {
		t.Errorf("unknown tool: %v, want not_found naming its tools", err)
	}
	ans, err = handle(t, s, "main", api.ExtensionToolBody{Extension: "everything", Tool: "greet", Arguments: json.RawMessage(`{"name":5}`)})
	if !(code(err) == api.CodeBadRequest || err == nil && ans.Result.IsError) {
		t.Errorf("greet with a number for name: %+v, %v; want bad_request or a result with is_error", ans, err)
	}
	_, err = handle(t, s, "laptop2", api.ExtensionToolBody{Extension: "everything"})
	if code(err) != api.CodeForbidden || !strings.Contains(err.Error(), "not lent to environment laptop2") {
		t.Errorf("from an environment it is not lent to: %v, want forbidden", err)
	}
	_, err = handle(t, s, "main", api.ExtensionToolBody{Extension: "tracker"})
	if code(err) != api.CodeNotFound || !strings.Contains(err.Error(), "the extensions of environment main are everything") {
		t.Errorf("an extension config.toml does not name: %v, want not_found naming everything", err)
	}
}

// TestFaults: an extension that cannot serve is unavailable with the last line it wrote to stderr,
// after one restart; one that never answers is TimedOut at the deadline; one that answers more
// than the SDK reads is unavailable, and one that answers more than an answer holds is cut.
func TestFaults(t *testing.T) {
	rogueSh := script(t, "rogue", rogue)
	starts := filepath.Join(t.TempDir(), "starts")
	tests := []struct {
		name    string
		command []string
		env     map[string]string
		tool    string
		code    api.ErrorCode
		timeout bool
		want    []string
	}{
		{name: "no such command", command: []string{"/nonexistent/tracker-mcp"}, code: api.CodeUnavailable,
			want: []string{"extension x could not start", "/nonexistent/tracker-mcp"}},
		{name: "exits at once", command: []string{"sh", "-c", `echo start >> "$STARTS"; echo "tracker: TRACKER_TOKEN is not set" >&2; exit 3`},
			env: map[string]string{"STARTS": starts}, code: api.CodeUnavailable,
			want: []string{"extension x could not start", "its last stderr line: tracker: TRACKER_TOKEN is not set"}},
		{name: "garbage on stdout", command: []string{"sh", "-c", `echo "garbage mode" >&2; while read -r l; do echo 'Welcome to tracker!'; done`},
			code: api.CodeUnavailable, want: []string{"extension x could not start", "its last stderr line: garbage mode"}},
		{name: "never answers", command: []string{"sh", "-c", `echo silent >&2; exec sleep 600`}, timeout: true},
		{name: "answers 100 MB", command: []string{rogueSh}, env: map[string]string{"ROGUE_SIZE": "100000000"}, tool: "huge",
			code: api.CodeUnavailable, want: []string{"larger than 16 MiB", "its last stderr line: rogue"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := extension.Config{Extensions: []extension.Spec{{Name: "x", Command: tt.command, Env: tt.env}}, Env: os.Environ()}
			if tt.timeout {
				cfg.Timeout = 2 * time.Second
			}
			s := extension.New(cfg)
			defer s.Close()
			start := time.Now()
			_, err := handle(t, s, "main", api.ExtensionToolBody{Extension: "x", Tool: tt.tool})
			if tt.timeout {
				if !errors.Is(err, api.ErrTimedOut) {
					t.Fatalf("got %v, want TimedOut", err)
				}
				if d := time.Since(start); d > time.Minute {
					t.Errorf("answered after %s, with a 2 s deadline", d)
				}
				return
			}
			if code(err) != tt.code {
				t.Fatalf("got %v, want %s", err, tt.code)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error %q lacks %q", err, w)
				}
			}
		})
	}
	// The extension that exits at once was started twice: once, and once again.
	if b, _ := os.ReadFile(starts); strings.Count(string(b), "start") != 2 {
		t.Errorf("the extension that exits at once started %d times, want 2", strings.Count(string(b), "start"))
	}
}

// TestCapped: a text of 6 MB of "<" (36 MB once escaped), which the SDK reads, comes back cut to the answer's cap, and the
// answer says so.
func TestCapped(t *testing.T) {
	s := extension.New(extension.Config{Extensions: []extension.Spec{{Name: "x", Command: []string{script(t, "rogue", rogue)},
		Env: map[string]string{"ROGUE_SIZE": "6000000"}}}, Env: os.Environ()})
	defer s.Close()
	ans, err := handle(t, s, "main", api.ExtensionToolBody{Extension: "x", Tool: "huge"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(ans)
	text := texts(ans.Result)
	if !ans.Truncated || len(b) > api.MaxExtensionAnswer || len(text) < api.MaxExtensionAnswer/8 || strings.Trim(text, "<") != "" {
		t.Errorf("answer of %d bytes (truncated %v) with %d bytes of text: want at most %d, truncated, the text's start",
			len(b), ans.Truncated, len(text), api.MaxExtensionAnswer)
	}
}

// TestLifecycle: one process serves every request; one that died is started again by the next
// request; an idle one is stopped; Close stops the one that runs.
func TestLifecycle(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	cmd := script(t, "wrapper", "#!/bin/sh\necho $$ >> '"+pids+"'\nexec '"+script(t, "rogue", rogue)+"'\n")
	s := extension.New(extension.Config{Extensions: []extension.Spec{{Name: "x", Command: []string{cmd}, Env: map[string]string{"ROGUE_SIZE": "3"}}},
		Env: os.Environ(), Idle: 2 * time.Second})
	defer s.Close()
	started := func() []int {
		b, _ := os.ReadFile(pids)
		var out []int
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			out = append(out, n)
		}
		return out
	}
	call := func() {
		t.Helper()
		ans, err := handle(t, s, "main", api.ExtensionToolBody{Extension: "x", Tool: "huge"})
		if err != nil || texts(ans.Result) != "<<<" {
			t.Fatalf("call: %+v, %v", ans, err)
		}
	}
	call()
	call()
	if p := started(); len(p) != 1 {
		t.Fatalf("two calls started %d processes, want 1", len(p))
	}
	first := started()[0]
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, first)
	call()
	if p := started(); len(p) != 2 {
		t.Fatalf("after it died, a call started %d processes in all, want 2", len(p))
	}
	// Idle for 2 s: stopped.
	waitGone(t, started()[1])
	call()
	third := started()[2]
	s.Close()
	if proctest.Running(third) {
		t.Errorf("the extension runs after Close")
	}
	if _, err := handle(t, s, "main", api.ExtensionToolBody{Extension: "x"}); code(err) != api.CodeUnavailable {
		t.Errorf("after Close: %v, want unavailable", err)
	}
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); proctest.Running(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs after 30 s", pid)
		}
	}
}

// TestCallRightAfterADeath: a call made as soon as the extension's process is gone, before its
// session may have noticed (the write of the call then meets a closed pipe: nothing reached the
// extension), starts it again and is answered, as a call made later is; five times over.
func TestCallRightAfterADeath(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	cmd := script(t, "wrapper", "#!/bin/sh\necho $$ >> '"+pids+"'\nexec '"+script(t, "rogue", rogue)+"'\n")
	s := extension.New(extension.Config{Extensions: []extension.Spec{{Name: "x", Command: []string{cmd}, Env: map[string]string{"ROGUE_SIZE": "3"}}},
		Env: os.Environ()})
	defer s.Close()
	for i := range 5 {
		ans, err := handle(t, s, "main", api.ExtensionToolBody{Extension: "x", Tool: "huge"})
		if err != nil || texts(ans.Result) != "<<<" {
			t.Fatalf("call %d: %+v, %v", i, ans, err)
		}
		b, _ := os.ReadFile(pids)
		f := strings.Fields(string(b))
		pid, _ := strconv.Atoi(f[len(f)-1])
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitGone(t, pid)
	}
}
