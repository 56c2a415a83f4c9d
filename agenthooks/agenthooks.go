// Package agenthooks is how the coding agents' CLIs that krad knows tell it their own state: the
// settings that make Claude Code, Codex and Gemini CLI call `krad-ade-agents hook KIND EVENT` at
// the points of their lives that matter (a prompt taken, a tool about to run, a permission asked,
// a turn's end, the session's end), and the reading of what each sends that command (Read), as
// the Report the command makes.
//
// Each agent's contract is its own documentation's, cited where it is used:
//
//   - Claude Code: hooks in its settings, https://code.claude.com/docs/en/hooks; the settings of
//     `claude --settings <json>` are a layer of their own, whose hooks add to those of the
//     person's files (https://code.claude.com/docs/en/settings#settings-precedence).
//   - Codex: its notify program, https://developers.openai.com/codex/config-reference (notify),
//     given as `-c notify=[...]`; and its hooks, https://developers.openai.com/codex/hooks, which
//     a person installs and trusts in Codex itself.
//   - Gemini CLI: hooks in its settings, https://geminicli.com/docs/hooks/reference, given as a
//     system defaults file (GEMINI_CLI_SYSTEM_DEFAULTS_PATH,
//     https://geminicli.com/docs/get-started/configuration/), whose hooks add to the person's.
//
// What the agents send is outside input: Read takes only the few fields it needs, a message is
// made one line of text (api.CleanMessage), and nothing an agent sends (its prompt, its last
// answer, a tool's input or output) goes further. Read has a fuzz target.
package agenthooks

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// The agents' kinds: what an [[agent]] profile's kind and `krad hooks --print-config` name.
const (
	Claude = "claude"
	Codex  = "codex"
	Gemini = "gemini"
)

// Kinds are the kinds of agent krad knows, in the order help lists them.
var Kinds = []string{Claude, Codex, Gemini}

// Known says whether kind is one of Kinds.
func Known(kind string) bool { return slices.Contains(Kinds, kind) }

// Companion is the name the hooks call the companion by: the app puts its folder first on PATH in
// every terminal (on an SSH host, the folder it installs the static krad in), and a name rather
// than a path keeps the hooks the same in every settings file, so that an agent that has them
// twice (its own settings and the app's) runs them once.
const Companion = "krad-ade-agents"

// Command is the shell command line of the hook for event of kind, as settings name it. It
// never fails the agent: without the companion on PATH (the agent run outside krad-ade's
// terminals, with the person's own settings holding these hooks) the shell's complaint is
// dropped and the hook succeeds.
func Command(kind, event string) string {
	return Companion + " hook " + kind + " " + event + " 2>/dev/null || true"
}

// hookTimeout is the seconds an agent gives one of these hooks before it gives up on it: far
// more than one takes (the command bounds its own wait for the bus, hookWait in package cli),
// and a bound of the agent's own should the command ever hang.
const hookTimeout = 5

// Events of Claude Code's hooks (https://code.claude.com/docs/en/hooks#hook-events), those the
// settings install: long-standing ones only, as a Claude Code that does not know an event refuses
// the whole settings layer that names it.
var claudeEvents = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Notification", "Stop", "SessionEnd"}

// claudeNeeds are the notification types after which Claude Code waits for the person (its
// Notification matcher values): a permission asked, its prompt idle for a minute, an MCP server's
// question.
var claudeNeeds = []string{"permission_prompt", "idle_prompt", "elicitation_dialog"}

// Events of Gemini CLI's hooks (https://geminicli.com/docs/hooks/reference) the settings
// install.
var geminiEvents = []string{"SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "Notification", "AfterAgent", "SessionEnd"}

// Events of Codex's hooks (https://developers.openai.com/codex/hooks) that krad hooks
// --print-config codex offers, for a person who installs and trusts them.
var codexEvents = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "Stop"}

// NotifyEvent is the event of Codex's notify program, which Codex calls with its JSON as the
// last argument.
const NotifyEvent = "notify"

// handler is one hook handler in the settings' shape, which the three agents share.
type handler struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout,omitempty"`
	Name    string `json:"name,omitempty"` // Gemini CLI: how /hooks names it
}

// group is one matcher group of an event's hooks.
type group struct {
	Matcher string    `json:"matcher,omitempty"`
	Hooks   []handler `json:"hooks"`
}

// hooksOf is the hooks object of kind's settings: for each event a group calling Command.
func hooksOf(kind string) map[string][]group {
	out := map[string][]group{}
	var events []string
	timeout := hookTimeout
	switch kind {
	case Claude:
		events = claudeEvents
	case Gemini:
		events, timeout = geminiEvents, hookTimeout*1000 // milliseconds there
	case Codex:
		events = codexEvents
	}
	for _, ev := range events {
		g := group{Hooks: []handler{{Type: "command", Command: Command(kind, ev), Timeout: timeout}}}
		switch {
		case kind == Claude && ev == "Notification":
			g.Matcher = strings.Join(claudeNeeds, "|")
		case kind == Gemini:
			g.Hooks[0].Name = "krad-" + strings.ToLower(ev)
		}
		out[ev] = append(out[ev], g)
	}
	return out
}

// ClaudeSettings is the settings JSON the app gives Claude Code with --settings: its hooks only.
// Claude Code takes it as the layer of the command line, whose hooks run beside those of the
// person's own settings files (hook entries merge across the layers rather than replace each
// other), which it leaves untouched.
func ClaudeSettings() string {
	return string(marshal(map[string]any{"hooks": hooksOf(Claude)}, false))
}

// marshal is v as JSON, indented or on one line, with "<", ">" and "&" as they are: the hooks'
// commands are read by people too.
func marshal(v any, indent bool) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	_ = enc.Encode(v) // maps, slices and strings only
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// CodexNotify is the notify program the app gives Codex (-c notify=…): the companion, to which
// Codex appends its JSON as the last argument when a turn completes.
var CodexNotify = []string{Companion, "hook", Codex, NotifyEvent}

// CodexNotifyTOML is CodexNotify as a TOML value, for -c notify=… and config.toml.
func CodexNotifyTOML() string {
	q := make([]string, len(CodexNotify))
	for i, s := range CodexNotify {
		b, _ := json.Marshal(s) // a TOML basic string is a JSON string, for these
		q[i] = string(b)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// AgentArgs are what the app adds to a known kind's command line (after the person's own
// words, before a prompt given as its last argument), and Prefix the shell words it puts before
// it, so that the agent calls its hooks. A kind krad does not know gets nothing.
//
//   - claude: --settings with ClaudeSettings.
//   - codex: -c notify=CodexNotify. Codex keeps one notify program: the person's own, if their
//     config names one, is run by the hook after it (see CodexChain), so that it still runs.
//   - gemini: nothing after; before, GEMINI_CLI_SYSTEM_DEFAULTS_PATH set to the file
//     `krad-ade-agents hooks-file gemini` writes: the system defaults Gemini CLI would read,
//     with the hooks added. Should that fail, Gemini CLI runs as it would have.
func AgentArgs(kind string) (args []string, prefix string) {
	switch kind {
	case Claude:
		return []string{"--settings", ClaudeSettings()}, ""
	case Codex:
		return []string{"-c", "notify=" + CodexNotifyTOML()}, ""
	case Gemini:
		return nil, `krad_defaults=$(` + Companion + ` hooks-file ` + Gemini + ` 2>/dev/null) && export ` + GeminiDefaultsVar + `="$krad_defaults"; `
	}
	return nil, ""
}

// GeminiDefaultsVar is the variable that tells Gemini CLI where its system defaults file is.
const GeminiDefaultsVar = "GEMINI_CLI_SYSTEM_DEFAULTS_PATH"

// GeminiDefaults is a Gemini CLI system defaults file: existing (the machine's own, or nil for
// none) with the hooks added to its hooks object, after any it has of the same event, none twice.
// Its other settings are kept as they are. Gemini CLI merges the hooks of all its settings
// layers, so the person's own (user, project) run beside these.
func GeminiDefaults(existing []byte) ([]byte, error) {
	top := map[string]json.RawMessage{}
	if len(strings.TrimSpace(string(existing))) > 0 {
		if err := json.Unmarshal(existing, &top); err != nil {
			return nil, err
		}
	}
	if top == nil {
		top = map[string]json.RawMessage{} // the file says null
	}
	hooks := map[string]json.RawMessage{}
	if raw, ok := top["hooks"]; ok {
		if err := json.Unmarshal(raw, &hooks); err != nil {
			return nil, err
		}
		if hooks == nil {
			hooks = map[string]json.RawMessage{}
		}
	}
	for ev, groups := range hooksOf(Gemini) {
		var have []json.RawMessage
		if raw, ok := hooks[ev]; ok {
			if err := json.Unmarshal(raw, &have); err != nil {
				return nil, err
			}
		}
		if !slices.ContainsFunc(have, func(raw json.RawMessage) bool {
			var g group
			return json.Unmarshal(raw, &g) == nil && slices.ContainsFunc(g.Hooks, func(h handler) bool {
				return h.Command == Command(Gemini, ev)
			})
		}) {
			have = append(have, marshal(groups[0], false))
		}
		hooks[ev] = marshal(have, false)
	}
	top["hooks"] = marshal(hooks, false)
	return marshal(top, true), nil
}
