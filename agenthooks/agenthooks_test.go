package agenthooks

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/BurntSushi/toml"

	"github.com/krad-ade/krad/api"
)

// TestRead: what each agent sends its hooks, in the shapes its documentation gives, is the
// report the hook makes.
func TestRead(t *testing.T) {
	const (
		none  api.State = ""
		work            = api.StateWorking
		idle            = api.StateIdle
		needs           = api.StateNeedsInput
		rest  api.State = "rest" // idle as a lifecycle report: the agent hands the terminal back
	)
	for _, tt := range []struct {
		kind, event, js string
		want            api.State
		message         string
	}{
		// Claude Code (https://code.claude.com/docs/en/hooks).
		{Claude, "SessionStart", `{"session_id":"abc123","hook_event_name":"SessionStart","source":"startup","model":"claude-sonnet-4-5"}`, idle, ""},
		{Claude, "SessionStart", `{"hook_event_name":"SessionStart","source":"clear"}`, idle, ""},
		{Claude, "SessionStart", `{"hook_event_name":"SessionStart","source":"compact"}`, none, ""},
		{Claude, "UserPromptSubmit", `{"hook_event_name":"UserPromptSubmit","prompt":"make TestRetry pass"}`, work, ""},
		{Claude, "PreToolUse", `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"npm test"}}`, work, ""},
		{Claude, "PostToolUse", `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_response":{"stdout":"` + strings.Repeat("x", 2*MaxPayload) + `"}}`, work, ""},
		{Claude, "Notification", `{"session_id":"abc123","hook_event_name":"Notification","message":"Claude needs your permission to use Bash","title":"Permission needed","notification_type":"permission_prompt"}`, needs, "Claude needs your permission to use Bash"},
		{Claude, "Notification", `{"hook_event_name":"Notification","message":"Claude is waiting for your input","notification_type":"idle_prompt"}`, needs, "Claude is waiting for your input"},
		{Claude, "Notification", `{"hook_event_name":"Notification","message":"Claude needs your permission to use Edit"}`, needs, "Claude needs your permission to use Edit"},
		{Claude, "Notification", `{"hook_event_name":"Notification","message":"Signed in","notification_type":"auth_success"}`, none, ""},
		{Claude, "Notification", `{"message":"line one\nline two\u001b]0;x\u0007","notification_type":"permission_prompt"}`, needs, "line one line two ]0;x"},
		{Claude, "Stop", `{"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"I've completed the refactoring."}`, idle, ""},
		{Claude, "SessionEnd", `{"hook_event_name":"SessionEnd","reason":"prompt_input_exit"}`, rest, ""},
		{Claude, "SessionEnd", `{"hook_event_name":"SessionEnd","reason":"other"}`, rest, ""},
		{Claude, "SessionEnd", `{"hook_event_name":"SessionEnd","reason":"clear"}`, none, ""},
		{Claude, "", `{"hook_event_name":"Stop"}`, idle, ""}, // the event from the JSON
		{Claude, "PreCompact", `{"hook_event_name":"PreCompact"}`, none, ""},
		{Claude, "Stop", `not json`, idle, ""},
		{Claude, "Notification", `not json`, needs, ""},
		// Gemini CLI (https://geminicli.com/docs/hooks/reference).
		{Gemini, "SessionStart", `{"session_id":"s","hook_event_name":"SessionStart","timestamp":"2025-12-01T10:30:00Z","source":"startup"}`, idle, ""},
		{Gemini, "BeforeAgent", `{"hook_event_name":"BeforeAgent","prompt":"Fix the authentication bug"}`, work, ""},
		{Gemini, "BeforeTool", `{"hook_event_name":"BeforeTool","tool_name":"write_file","tool_input":{}}`, work, ""},
		{Gemini, "Notification", `{"hook_event_name":"Notification","notification_type":"ToolPermission","message":"Allow run_shell_command?","details":{}}`, needs, "Allow run_shell_command?"},
		{Gemini, "AfterAgent", `{"hook_event_name":"AfterAgent","prompt":"x","prompt_response":"done","stop_hook_active":false}`, idle, ""},
		{Gemini, "SessionEnd", `{"hook_event_name":"SessionEnd","reason":"exit"}`, rest, ""},
		{Gemini, "SessionEnd", `{"hook_event_name":"SessionEnd","reason":"clear"}`, none, ""},
		// Codex: notify (https://developers.openai.com/codex/config-reference) and hooks.
		{Codex, NotifyEvent, `{"type":"agent-turn-complete","thread-id":"b5f6c1c2","turn-id":"12345","cwd":"/src","input-messages":["Rename foo to bar"],"last-assistant-message":"Rename complete."}`, rest, ""},
		{Codex, NotifyEvent, `{"type":"something-new"}`, none, ""},
		{Codex, "UserPromptSubmit", `{"hook_event_name":"UserPromptSubmit","prompt":"x","turn_id":"t"}`, work, ""},
		{Codex, "PermissionRequest", `{"hook_event_name":"PermissionRequest","tool_name":"Bash"}`, needs, "Codex needs your approval to use Bash"},
		{Codex, "Stop", `{"hook_event_name":"Stop"}`, idle, ""},
		{"aider", "Stop", `{}`, none, ""},
	} {
		name := tt.kind + " " + tt.event + " " + tt.js
		if len(name) > 80 {
			name = name[:80]
		}
		got, ok := Read(tt.kind, tt.event, []byte(tt.js))
		state := got.State
		if got.Lifecycle {
			state = rest
		}
		if !ok {
			state = none
		}
		if state != tt.want || ok && got.Message != tt.message {
			t.Errorf("%s: got %q %+v, want %q %q", name, state, got, tt.want, tt.message)
		}
		if ok && got.Lifecycle && got.State != api.StateIdle {
			t.Errorf("%s: a lifecycle %s", name, got.State)
		}
	}
}

// FuzzRead: whatever an agent sends, Read never panics, and what it reports is a state a Report
// takes, with a message of one line within the bus's bound.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		`{"hook_event_name":"Notification","message":"Claude needs your permission to use Bash","notification_type":"permission_prompt"}`,
		`{"hook_event_name":"SessionStart","source":"compact"}`, `{"type":"agent-turn-complete"}`,
		`{"tool_name":"` + strings.Repeat("\u00e9", 200) + `"}`, `{"message":"\u0000\u001b[2J"}`, `[]`, `null`, "\xff",
	} {
		for _, kind := range append(Kinds, "x") {
			f.Add(kind, "", []byte(s))
			f.Add(kind, "Notification", []byte(s))
		}
	}
	f.Add(Codex, "PermissionRequest", []byte(`{"tool_name":"a\nb"}`))
	f.Fuzz(func(t *testing.T, kind, event string, js []byte) {
		b, ok := Read(kind, event, js)
		if !ok {
			return
		}
		line, err := json.Marshal(api.NewRequest(api.Report, &b))
		var raw api.RawRequest
		if err == nil {
			err = json.Unmarshal(line, &raw)
		}
		if err == nil {
			_, err = raw.Decode()
		}
		if err != nil {
			t.Fatalf("Read(%q, %q) = %+v, which the bus refuses: %v", kind, event, b, err)
		}
		if strings.ContainsFunc(b.Message, unicode.IsControl) || len(b.Message) > api.MaxReportMessage {
			t.Fatalf("message %q", b.Message)
		}
	})
}

// TestSettings: the settings the app gives each agent hold a hook for each event, calling the
// companion with the agent's kind and the event.
func TestSettings(t *testing.T) {
	var claude struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type, Command string
				Timeout       int
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(ClaudeSettings()), &claude); err != nil {
		t.Fatal(err)
	}
	for _, ev := range claudeEvents {
		g := claude.Hooks[ev]
		if len(g) != 1 || len(g[0].Hooks) != 1 || g[0].Hooks[0].Type != "command" ||
			g[0].Hooks[0].Command != "krad-ade-agents hook claude "+ev+" 2>/dev/null || true" || g[0].Hooks[0].Timeout != 5 {
			t.Errorf("%s: %+v", ev, g)
		}
	}
	if len(claude.Hooks) != len(claudeEvents) || claude.Hooks["Notification"][0].Matcher != "permission_prompt|idle_prompt|elicitation_dialog" {
		t.Errorf("claude's hooks: %+v", claude.Hooks)
	}
	args, prefix := AgentArgs(Codex)
	if len(args) != 2 || args[0] != "-c" || args[1] != `notify=["krad-ade-agents", "hook", "codex", "notify"]` || prefix != "" {
		t.Errorf("codex: %q %q", args, prefix)
	}
	var notify struct{ Notify []string }
	if _, err := toml.Decode(strings.Replace(args[1], "=", " = ", 1), &notify); err != nil || strings.Join(notify.Notify, " ") != "krad-ade-agents hook codex notify" {
		t.Errorf("codex's notify is no TOML array: %v %q", err, notify.Notify)
	}
	if args, prefix := AgentArgs(Gemini); args != nil || !strings.Contains(prefix, "export GEMINI_CLI_SYSTEM_DEFAULTS_PATH=") {
		t.Errorf("gemini: %q %q", args, prefix)
	}
	if args, prefix := AgentArgs("aider"); args != nil || prefix != "" {
		t.Errorf("an unknown kind: %q %q", args, prefix)
	}
}

// TestGeminiDefaults: the system defaults file keeps what the machine's says, its hooks
// included, adds the companion's hooks once, and refuses what is not a settings object.
func TestGeminiDefaults(t *testing.T) {
	mine := `{"general":{"vimMode":true},"hooks":{"AfterAgent":[{"hooks":[{"type":"command","command":"/usr/local/bin/audit"}]}]}}`
	out, err := GeminiDefaults([]byte(mine))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		General map[string]bool
		Hooks   map[string][]struct {
			Hooks []struct{ Command, Name string }
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if !got.General["vimMode"] {
		t.Errorf("the machine's setting is gone: %s", out)
	}
	after := got.Hooks["AfterAgent"]
	if len(after) != 2 || after[0].Hooks[0].Command != "/usr/local/bin/audit" || after[1].Hooks[0].Command != Command(Gemini, "AfterAgent") {
		t.Errorf("AfterAgent: %+v", after)
	}
	for _, ev := range geminiEvents {
		if n := len(got.Hooks[ev]); n == 0 {
			t.Errorf("no hook for %s", ev)
		}
	}
	again, err := GeminiDefaults(out)
	if err != nil || string(again) != string(out) {
		t.Errorf("made from its own output it changed:\n%s\n%v", again, err)
	}
	if empty, err := GeminiDefaults(nil); err != nil || !strings.Contains(string(empty), Command(Gemini, "BeforeAgent")) {
		t.Errorf("from no file: %s %v", empty, err)
	}
	for _, bad := range []string{`[]`, `{"hooks":[1]}`, `{"hooks":{"AfterAgent":{}}}`, `{`} {
		if _, err := GeminiDefaults([]byte(bad)); err == nil {
			t.Errorf("%s: read", bad)
		}
	}
}

func TestCodexChain(t *testing.T) {
	for _, tt := range []struct{ config, want string }{
		{`notify = ["python3", "/home/u/notify.py"]`, "python3 /home/u/notify.py"},
		{"model = \"o3\"\n[mcp_servers.krad]\ncommand = \"krad\"\n", ""},
		{`notify = ["krad-ade-agents", "hook", "codex", "notify"]`, ""},
		{`notify = ["/opt/krad/krad-ade-agents", "hook", "codex", "notify"]`, ""},
		{`notify = "x"`, ""}, {`notify = []`, ""}, {`notify = [`, ""},
	} {
		if got := strings.Join(CodexChain([]byte(tt.config)), " "); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.config, got, tt.want)
		}
	}
}

// TestPrintConfig: what krad hooks --print-config prints parses as the file it is for.
func TestPrintConfig(t *testing.T) {
	for _, kind := range []string{Claude, Gemini} {
		text, ok := PrintConfig(kind)
		_, js, _ := strings.Cut(text, "\n")
		var v struct{ Hooks map[string]any }
		if !ok || json.Unmarshal([]byte(js), &v) != nil || len(v.Hooks) == 0 {
			t.Errorf("%s: %q", kind, text)
		}
	}
	text, ok := PrintConfig(Codex)
	toml1, js, _ := strings.Cut(text, "\n# or,")
	var c struct{ Notify []string }
	if _, err := toml.Decode(toml1, &c); !ok || err != nil || len(c.Notify) != 4 {
		t.Errorf("codex's notify: %v %q", err, toml1)
	}
	_, js, _ = strings.Cut(js, "\n")
	var v struct{ Hooks map[string]any }
	if err := json.Unmarshal([]byte(js), &v); err != nil || len(v.Hooks) != len(codexEvents) {
		t.Errorf("codex's hooks.json: %v %q", err, js)
	}
	if _, ok := PrintConfig("aider"); ok {
		t.Error("an unknown kind has a config")
	}
}

// FuzzGeminiDefaults: whatever the machine's system defaults file holds, the file made of it is
// a settings object with the hooks in, and made again of itself it is the same; or it is refused.
func FuzzGeminiDefaults(f *testing.F) {
	for _, s := range []string{`{"hooks":{"AfterAgent":[{"hooks":[{"type":"command","command":"x"}]}]}}`, `{}`, ``, `{"hooks":{}}`,
		`{"hooks":{"BeforeTool":[{"matcher":"*","hooks":[]}],"Other":1}}`, `{"a":[1,{"b":null}]}`, `[]`, `{"hooks":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, existing []byte) {
		out, err := GeminiDefaults(existing)
		if err != nil {
			return
		}
		var got struct {
			Hooks map[string]json.RawMessage `json:"hooks"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q made %q: %v", existing, out, err)
		}
		for _, ev := range geminiEvents {
			if !strings.Contains(string(out), Command(Gemini, ev)) {
				t.Fatalf("%q made %q: no hook for %s", existing, out, ev)
			}
		}
		again, err := GeminiDefaults(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("made again of %q: %q, %v", out, again, err)
		}
	})
}

// FuzzCodexChain: whatever the person's Codex config holds, the program run after the hook is
// none, or one that is not the hook itself.
func FuzzCodexChain(f *testing.F) {
	for _, s := range []string{`notify = ["a", "b"]`, `notify = ["krad-ade-agents"]`, `notify = 1`, "[x]\nnotify = [\"a\"]", `notify = [""]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, config []byte) {
		argv := CodexChain(config)
		if argv != nil && (argv[0] == "" || argv[0] == Companion || strings.HasSuffix(argv[0], "/"+Companion)) {
			t.Fatalf("%q: %q", config, argv)
		}
	})
}
