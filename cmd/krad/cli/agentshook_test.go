package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/agenthooks"
	"github.com/krad-ade/krad/kradtest/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// TestHookReports: an agent's hook tells the app the state its JSON means, with the agent's
// message, as its terminal, and prints nothing; a hook with nothing to tell, or called outside
// krad-ade's terminals, asks nothing. It exits 0 whatever happens.
func TestHookReports(t *testing.T) {
	app := &testApp{}
	env, _ := startApp(t, app)
	env["HOME"] = t.TempDir() // no Codex config of the person's to run after notify
	for _, tt := range []struct {
		args  []string
		stdin string
		want  string // the request, "" for none
	}{
		{[]string{"hook", "claude", "Notification"}, `{"session_id":"abc123","hook_event_name":"Notification","message":"Claude needs your permission to use Bash","notification_type":"permission_prompt"}`,
			`Terminal main:4 {"Report":{"state":"needs_input","message":"Claude needs your permission to use Bash"}}`},
		{[]string{"hook", "claude", "Stop"}, `{"hook_event_name":"Stop","last_assistant_message":"secret plans"}`, `Terminal main:4 {"Report":{"state":"idle"}}`},
		{[]string{"hook", "claude"}, `{"hook_event_name":"UserPromptSubmit","prompt":"do it"}`, `Terminal main:4 {"Report":{"state":"working"}}`},
		{[]string{"hook", "gemini", "SessionEnd"}, `{"hook_event_name":"SessionEnd","reason":"exit"}`, `Terminal main:4 {"Report":{"state":"idle","lifecycle":true}}`},
		{[]string{"hook", "codex", "notify", `{"type":"agent-turn-complete","turn-id":"1","last-assistant-message":"done"}`}, "", `Terminal main:4 {"Report":{"state":"idle","lifecycle":true}}`},
		{[]string{"hook", "claude", "Notification"}, `{"notification_type":"auth_success","message":"ok"}`, ""},
		{[]string{"hook", "aider", "Stop"}, `{}`, ""},
		{[]string{"hook"}, ``, ""},
		{[]string{"hook", "claude", "--bogus", "-x"}, `{}`, ""},
	} {
		before := len(app.requests())
		out, errOut, code := runAs(t, "krad-ade-agents", env, strings.NewReader(tt.stdin), tt.args...)
		got := ""
		if r := app.requests(); len(r) > before {
			got = strings.Join(r[before:], "\n")
		}
		if got != tt.want || out != "" || errOut != "" || code != 0 {
			t.Errorf("%q: the app got %q, want %q; printed %q %q, exit code %d", tt.args, got, tt.want, out, errOut, code)
		}
	}
	delete(env, varTerminal)
	before := len(app.requests())
	if out, errOut, code := runAs(t, "krad-ade-agents", env, strings.NewReader(`{}`), "hook", "claude", "Stop"); out != "" || errOut != "" || code != 0 || len(app.requests()) != before {
		t.Errorf("outside the app's terminals: printed %q %q, exit code %d, requests %q", out, errOut, code, app.requests()[before:])
	}
}

// TestHookIsBounded: the hook, as the agent runs it (the real program, its JSON on stdin), never
// holds the agent up: with a bus that takes the connection and never answers it returns within
// its second, and with no bus at once; both times it prints nothing and exits 0.
func TestHookIsBounded(t *testing.T) {
	bin := testbin.Dir(t)
	tok := newToken(t)
	for _, tt := range []struct {
		name, endpoint string
	}{
		{"a bus that hangs", silentPeer(t)},
		{"no bus", deadEndpoint(t)},
	} {
		cmd := exec.Command(filepath.Join(bin, "krad-ade-agents"), "hook", "claude", "Stop")
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), varEndpoint + "=" + tt.endpoint, varToken + "=" + tok.Reveal(), varTerminal + "=main:4"}
		cmd.Stdin = strings.NewReader(`{"hook_event_name":"Stop"}`)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		began := time.Now()
		err := cmd.Run()
		took := time.Since(began)
		if err != nil || out.Len() > 0 {
			t.Errorf("%s: %v, printed %q", tt.name, err, out.String())
		}
		// The agent's own timeout for it is 5 s (agenthooks): the hook must end well before.
		if took > 4*time.Second {
			t.Errorf("%s: the hook took %v", tt.name, took)
		}
		t.Logf("%s: the hook returned after %v (bounded by %v)", tt.name, took.Round(time.Millisecond), hookWait)
	}
}

// TestCodexNotifyRunsThePersonsOwn: the hook Codex calls at a turn's end runs, after its report,
// the notify program of the person's Codex config, with Codex's JSON last, as Codex would have
// without krad-ade's -c notify; the config is only read.
func TestCodexNotifyRunsThePersonsOwn(t *testing.T) {
	bin := testbin.Dir(t)
	home := t.TempDir()
	marker := filepath.Join(home, "ran")
	config := []byte(`notify = ["sh", "-c", "printf '%s' \"$1\" > ` + marker + `", "sh"]` + "\n")
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), config, 0o600); err != nil {
		t.Fatal(err)
	}
	app := &testApp{}
	env, _ := startApp(t, app)
	js := `{"type":"agent-turn-complete","turn-id":"7"}`
	cmd := exec.Command(filepath.Join(bin, "krad-ade-agents"), "hook", "codex", "notify", js)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, varEndpoint + "=" + env[varEndpoint], varToken + "=" + env[varToken], varTerminal + "=main:4"}
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("%v, printed %q", err, out)
	}
	if got, _ := os.ReadFile(marker); string(got) != js {
		t.Errorf("the person's notify got %q, want %q", got, js)
	}
	if r := app.requests(); len(r) != 1 || r[0] != `Terminal main:4 {"Report":{"state":"idle","lifecycle":true}}` {
		t.Errorf("the app got %q", r)
	}
	if now, _ := os.ReadFile(filepath.Join(home, ".codex", "config.toml")); !bytes.Equal(now, config) {
		t.Errorf("config.toml changed: %q", now)
	}
}

// TestHooksFileGemini: the system defaults file krad-ade gives Gemini CLI holds what the
// machine's (or the person's GEMINI_CLI_SYSTEM_DEFAULTS_PATH) says, with the hooks added; the
// source is left as it was, and the file is the person's alone. A folder in the way that is not
// theirs is refused.
func TestHooksFileGemini(t *testing.T) {
	home := t.TempDir()
	source := filepath.Join(t.TempDir(), "defaults.json")
	mine := []byte(`{"ui":{"theme":"GitHub"},"hooks":{"BeforeTool":[{"matcher":"run_shell_command","hooks":[{"type":"command","command":"/opt/audit"}]}]}}`)
	if err := os.WriteFile(source, mine, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, agenthooks.GeminiDefaultsVar: source}
	out, errOut, code := runAs(t, "krad-ade-agents", env, nil, "hooks-file", "gemini")
	path := strings.TrimSpace(out)
	if code != 0 || errOut != "" || path != filepath.Join(home, ".krad-ade", "hooks", "gemini-system-defaults.json") {
		t.Fatalf("got %q %q, exit code %d", out, errOut, code)
	}
	b, err := os.ReadFile(path)
	var got struct {
		UI    map[string]string
		Hooks map[string][]json.RawMessage
	}
	if err != nil || json.Unmarshal(b, &got) != nil || got.UI["theme"] != "GitHub" || len(got.Hooks["BeforeTool"]) != 2 || !strings.Contains(string(got.Hooks["BeforeTool"][1]), "krad-ade-agents hook gemini BeforeTool") {
		t.Errorf("the file: %s (%v)", b, err)
	}
	if now, _ := os.ReadFile(source); !bytes.Equal(now, mine) {
		t.Errorf("the source changed: %s", now)
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: %v, %v: not the person's alone", p, fi.Mode(), err)
		}
	}
	// Its own file named as the source (a terminal of an agent it started) is not read as the
	// person's: the hooks stay once.
	env[agenthooks.GeminiDefaultsVar] = path
	if _, _, code := runAs(t, "krad-ade-agents", env, nil, "hooks-file", "gemini"); code != 0 {
		t.Fatal(code)
	}
	if b, _ := os.ReadFile(path); strings.Count(string(b), "hook gemini BeforeTool") != 1 {
		t.Errorf("the hooks twice: %s", b)
	}
	// A symlink where the folder goes is refused, and nothing is written through it.
	other := t.TempDir()
	home2 := t.TempDir()
	if err := os.Mkdir(filepath.Join(home2, ".krad-ade"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(home2, ".krad-ade", "hooks")); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runAs(t, "krad-ade-agents", map[string]string{"HOME": home2}, nil, "hooks-file", "gemini"); code == 0 || !strings.Contains(errOut, "not a folder") {
		t.Errorf("through a symlink: %q, exit code %d", errOut, code)
	}
	if entries, _ := os.ReadDir(other); len(entries) != 0 {
		t.Errorf("written through the symlink: %v", entries)
	}
}

// TestHooksPrintConfig: krad hooks --print-config prints each agent's snippet; another name is a
// usage error.
func TestHooksPrintConfig(t *testing.T) {
	for _, kind := range agenthooks.Kinds {
		want, _ := agenthooks.PrintConfig(kind)
		if out, errOut, code := run(t, nil, Options{}, "hooks", "--print-config", kind); out != want || errOut != "" || code != ExitOK {
			t.Errorf("%s: got %q %q, exit code %d", kind, out, errOut, code)
		}
	}
	if _, errOut, code := run(t, nil, Options{}, "hooks", "--print-config", "aider"); code != ExitUsage || !strings.Contains(errOut, "--print-config takes claude, codex, gemini") {
		t.Errorf("aider: %q, exit code %d", errOut, code)
	}
}
