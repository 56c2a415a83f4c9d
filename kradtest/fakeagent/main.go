// Command fakeagent is, for tests, the coding agents' CLIs that krad-ade knows, as their hooks see
// them. Called claude, codex or gemini (testbin.FakeAgents links it under those names), it takes
// that CLI's flags for its settings, reads the settings files that CLI reads, merges their hooks
// as that CLI's documentation says, and calls them at the points that CLI does, with the JSON the
// documentation gives:
//
//   - claude: --settings JSON-or-FILE, ~/.claude/settings.json; hooks run through sh -c, the JSON
//     on stdin, in a session of their own, one at a time, each within its timeout (seconds), their
//     output captured. https://code.claude.com/docs/en/hooks
//   - gemini: $GEMINI_CLI_SYSTEM_DEFAULTS_PATH (else /etc/gemini-cli/system-defaults.json) and
//     ~/.gemini/settings.json; the same, with timeouts in milliseconds.
//     https://geminicli.com/docs/hooks/reference
//   - codex: -c notify=[…] (TOML), else notify of $CODEX_HOME/config.toml; at a turn's end the
//     notify program runs with the JSON as its last argument, not waited for; once it has
//     exited, its TUI redraws, as Codex's does at rest: "› turn complete" above a new "> ".
//     https://developers.openai.com/codex/config-reference
//
// It is a line-by-line prompt on its terminal: "> ". Each line is a prompt (UserPromptSubmit):
//
//	work N   a tool runs for N seconds (PreToolUse, PostToolUse), printing nothing but, for codex, its
//	         status line, then the turn ends
//	ask      it asks the person's permission (Notification) and waits for a line: y lets the tool run
//	exit     the session ends (SessionEnd) and it exits 0
//	else     it answers "you said …" and the turn ends (Stop)
//
// A hook's output, which a real CLI keeps off its screen, is shown as "HOOK OUTPUT: …", so that a
// test sees a hook that printed. With FAKEAGENT_LOG set, it appends a line per hook to that file:
// "EVENT START_UNIX_NANO END_UNIX_NANO EXIT", and one as each turn ends, before its hooks run:
// "TurnEnd T T 0".
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"
)

type handler struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
}

type group struct {
	Matcher string    `json:"matcher"`
	Hooks   []handler `json:"hooks"`
}

type settings struct {
	Hooks map[string][]group `json:"hooks"`
}

type agent struct {
	kind    string
	hooks   map[string][]group // merged over the layers, concatenated
	notify  []string           // codex
	session string
	cwd     string
	log     string
}

func main() {
	kind := filepath.Base(os.Args[0])
	a := &agent{kind: kind, hooks: map[string][]group{}, session: fmt.Sprintf("s-%d", os.Getpid()), log: os.Getenv("FAKEAGENT_LOG")}
	a.cwd, _ = os.Getwd()
	home := os.Getenv("HOME")
	args := os.Args[1:]
	var prompt string
	switch kind {
	case "claude":
		a.layer(filepath.Join(home, ".claude", "settings.json"))
		for len(args) > 0 {
			if args[0] == "--settings" && len(args) > 1 {
				if strings.HasPrefix(strings.TrimSpace(args[1]), "{") {
					a.merge([]byte(args[1]))
				} else {
					a.layer(args[1])
				}
				args = args[2:]
				continue
			}
			prompt, args = args[0], args[1:]
		}
	case "gemini":
		defaults := os.Getenv("GEMINI_CLI_SYSTEM_DEFAULTS_PATH")
		if defaults == "" {
			defaults = "/etc/gemini-cli/system-defaults.json"
		}
		a.layer(defaults)
		a.layer(filepath.Join(home, ".gemini", "settings.json"))
		if len(args) > 0 {
			prompt = args[len(args)-1]
		}
	case "codex":
		codexHome := os.Getenv("CODEX_HOME")
		if codexHome == "" {
			codexHome = filepath.Join(home, ".codex")
		}
		var c struct{ Notify []string }
		if b, err := os.ReadFile(filepath.Join(codexHome, "config.toml")); err == nil {
			_, _ = toml.Decode(string(b), &c)
		}
		a.notify = c.Notify
		for len(args) > 0 {
			if args[0] == "-c" && len(args) > 1 {
				if v, ok := strings.CutPrefix(args[1], "notify="); ok {
					var o struct{ Notify []string }
					if _, err := toml.Decode("notify = "+v, &o); err != nil {
						fmt.Fprintln(os.Stderr, "codex: bad -c notify:", err)
						os.Exit(2)
					}
					a.notify = o.Notify
				}
				args = args[2:]
				continue
			}
			prompt, args = args[0], args[1:]
		}
	default:
		fmt.Fprintln(os.Stderr, "fakeagent: call me claude, codex or gemini")
		os.Exit(2)
	}

	a.event("SessionStart", map[string]any{"source": "startup"})
	in := bufio.NewReader(os.Stdin)
	if prompt != "" {
		a.turn(prompt, in)
	}
	for {
		fmt.Print("> ")
		line, err := in.ReadString('\n')
		line = strings.TrimSpace(line)
		if err != nil && line == "" {
			a.event("SessionEnd", map[string]any{"reason": "other"})
			return
		}
		if line == "exit" {
			a.event("SessionEnd", map[string]any{"reason": "prompt_input_exit"})
			fmt.Println("bye")
			return
		}
		if line != "" {
			a.turn(line, in)
		}
	}
}

// turn is one prompt and the agent's answer.
func (a *agent) turn(prompt string, in *bufio.Reader) {
	a.event("UserPromptSubmit", map[string]any{"prompt": prompt})
	fields := strings.Fields(prompt)
	switch {
	case len(fields) == 2 && fields[0] == "work":
		n, _ := strconv.ParseFloat(fields[1], 64)
		tool := map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "sleep " + fields[1]}}
		a.event("PreToolUse", tool)
		fmt.Println("working on it")
		a.work(time.Duration(n * float64(time.Second)))
		tool["tool_response"] = map[string]any{"stdout": strings.Repeat("output ", 20000)} // a large payload
		a.event("PostToolUse", tool)
		fmt.Printf("done %s\n", fields[1])
	case prompt == "ask":
		a.event("PreToolUse", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "rm -rf build"}})
		message := "Claude needs your permission to use Bash"
		if a.kind == "gemini" {
			message = "Gemini CLI asks to run: run_shell_command"
		}
		a.event("Notification", map[string]any{"notification_type": a.permissionType(), "message": message, "title": "Permission needed"})
		fmt.Print("Allow Bash? (y/n) ")
		answer, _ := in.ReadString('\n')
		if strings.TrimSpace(answer) != "y" {
			fmt.Println("not allowed")
			break
		}
		a.event("PostToolUse", map[string]any{"tool_name": "Bash"})
		fmt.Println("ran it")
	default:
		fmt.Printf("you said %s\n", prompt)
	}
	a.event("Stop", map[string]any{"stop_hook_active": false, "last_assistant_message": "done"})
}

// work takes d. Claude Code and Gemini CLI print nothing meanwhile here (a tool that is silent);
// Codex, as its TUI does, redraws its status line while it works.
func (a *agent) work(d time.Duration) {
	if a.kind != "codex" {
		time.Sleep(d)
		return
	}
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		fmt.Printf("\r• Working (%ds • esc to interrupt)", int(time.Until(end).Seconds()))
	}
	fmt.Print("\r\033[K")
}

func (a *agent) permissionType() string {
	if a.kind == "gemini" {
		return "ToolPermission"
	}
	return "permission_prompt"
}

// names is each CLI's name for an event of Claude Code's.
var names = map[string]map[string]string{
	"gemini": {"UserPromptSubmit": "BeforeAgent", "PreToolUse": "BeforeTool", "PostToolUse": "AfterTool", "Stop": "AfterAgent"},
}

// event runs the hooks of event, as the agent's CLI does.
func (a *agent) event(event string, fields map[string]any) {
	if event == "Stop" {
		// The turn's end, hooks or none: what a Wait on the agent waits for.
		now := time.Now().UnixNano()
		a.logf("TurnEnd %d %d 0", now, now)
	}
	if a.kind == "codex" {
		if event == "Stop" && len(a.notify) > 0 {
			js, _ := json.Marshal(map[string]any{"type": "agent-turn-complete", "thread-id": a.session, "turn-id": "1",
				"cwd": a.cwd, "input-messages": []string{"x"}, "last-assistant-message": "done"})
			a.notifyProgram(js)
		}
		return
	}
	if n, ok := names[a.kind][event]; ok {
		event = n
	}
	payload := map[string]any{"session_id": a.session, "transcript_path": "/tmp/t.jsonl", "cwd": a.cwd, "hook_event_name": event}
	if a.kind == "gemini" {
		payload["timestamp"] = time.Now().UTC().Format(time.RFC3339)
	}
	for k, v := range fields {
		payload[k] = v
	}
	js, _ := json.Marshal(payload)
	matchOn := ""
	switch event {
	case "Notification":
		matchOn, _ = fields["notification_type"].(string)
	case "PreToolUse", "PostToolUse", "BeforeTool", "AfterTool":
		matchOn, _ = fields["tool_name"].(string)
	case "SessionStart":
		matchOn, _ = fields["source"].(string)
	case "SessionEnd":
		matchOn, _ = fields["reason"].(string)
	}
	for _, g := range a.hooks[event] {
		if !matches(g.Matcher, matchOn) {
			continue
		}
		for _, h := range g.Hooks {
			if h.Type == "command" {
				a.run(event, h, js)
			}
		}
	}
}

// matches is a matcher as the CLIs read one: empty or * matches all; letters, digits, _ and |
// are exact names; anything else a regular expression.
func matches(matcher, value string) bool {
	if matcher == "" || matcher == "*" {
		return true
	}
	if regexp.MustCompile(`^[A-Za-z0-9_|]+$`).MatchString(matcher) {
		for _, m := range strings.Split(matcher, "|") {
			if m == value {
				return true
			}
		}
		return false
	}
	re, err := regexp.Compile(matcher)
	return err == nil && re.MatchString(value)
}

// run runs one command hook and waits for it, within its timeout.
func (a *agent) run(event string, h handler, js []byte) {
	timeout := 60 * time.Second
	if h.Timeout > 0 {
		timeout = time.Duration(h.Timeout) * time.Second
		if a.kind == "gemini" {
			timeout = time.Duration(h.Timeout) * time.Millisecond
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", h.Command)
	cmd.Stdin = bytes.NewReader(js)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal, as Claude Code runs them
	start := time.Now()
	err := cmd.Run()
	code := 0
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	} else if err != nil {
		code = -1
	}
	a.logf("%s %d %d %d", event, start.UnixNano(), time.Now().UnixNano(), code)
	if out.Len() > 0 {
		fmt.Printf("HOOK OUTPUT: %q\n", out.String())
	}
}

// notifyProgram starts Codex's notify program with js last, its output on the terminal, and
// does not wait for it.
func (a *agent) notifyProgram(js []byte) {
	cmd := exec.Command(a.notify[0], append(a.notify[1:], string(js))...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Printf("notify failed: %v\n", err)
		return
	}
	go func() {
		err := cmd.Wait()
		a.logf("notify %d %d %v", start.UnixNano(), time.Now().UnixNano(), err)
		fmt.Print("\r\033[K› turn complete\r\n> ") // its redraw at rest, after the notify's word
	}()
}

// layer merges the hooks of a settings file, if there is one.
func (a *agent) layer(path string) {
	if b, err := os.ReadFile(path); err == nil {
		a.merge(b)
	}
}

// merge adds the hooks of one settings layer after those of the others.
func (a *agent) merge(js []byte) {
	var s settings
	if err := json.Unmarshal(js, &s); err != nil {
		fmt.Fprintln(os.Stderr, a.kind+": settings:", err)
		os.Exit(2)
	}
	for ev, gs := range s.Hooks {
		a.hooks[ev] = append(a.hooks[ev], gs...)
	}
}

func (a *agent) logf(format string, args ...any) {
	if a.log == "" {
		return
	}
	f, err := os.OpenFile(a.log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintf(f, format+"\n", args...)
	f.Close()
}
