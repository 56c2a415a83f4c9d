package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/worktree"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in, self string
		want     api.Target
		wantErr  string // a part of the error
	}{
		{in: "2", want: 2},
		{in: "2", self: "main:4", want: 2},
		{in: "02", self: "main:4", want: 2},
		{in: "main:2", self: "main:4", want: 2},
		{in: "my_env-1:12", self: "my_env-1:3", want: 12},
		{in: "0", wantErr: `target "0": terminal numbers start at 1`},
		{in: "main:0", self: "main:4", wantErr: `target "main:0": terminal numbers start at 1`},
		{in: "", wantErr: `target "": a target is a terminal number, like 2, or environment:number, like main:2`},
		{in: "x", wantErr: "a target is a terminal number"},
		{in: "-1", wantErr: "a target is a terminal number"},
		{in: "+1", wantErr: "a target is a terminal number"},
		{in: " 2", wantErr: "a target is a terminal number"},
		{in: "2x", wantErr: "a target is a terminal number"},
		{in: "main:", self: "main:4", wantErr: "a target is a terminal number"},
		{in: "99999999999999999999", wantErr: "the terminal number is too large"},
		{in: "dev:2", self: "main:4",
			wantErr: `target "dev:2" names environment "dev", but targets are terminals of the caller's own environment, "main"`},
		{in: ":2", self: "main:4", wantErr: `names environment "", but targets are terminals of the caller's own environment, "main"`},
		{in: "main:2", self: "", wantErr: "krad is not in one of krad-ade's terminals (KRAD_ADE_TERMINAL is not set)"},
		{in: "main:2", self: "garbage", wantErr: "KRAD_ADE_TERMINAL is not set"},
		{in: "\x1b[2J:2", self: "main:4", wantErr: `names environment "\x1b[2J"`},
	}
	for _, tt := range tests {
		got, err := parseTarget(tt.in, tt.self)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseTarget(%q, %q): got %d, %v; want an error with %q", tt.in, tt.self, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseTarget(%q, %q): got %d, %v; want %d", tt.in, tt.self, got, err, tt.want)
		}
	}
}

// TestTargetUsage: a target krad cannot use is a usage error, said before krad looks for the bus.
func TestTargetUsage(t *testing.T) {
	tests := []struct {
		env     map[string]string
		args    []string
		wantErr string
	}{
		{map[string]string{varTerminal: "main:4"}, []string{"check", "dev:2"},
			"krad: error: target \"dev:2\" names environment \"dev\", but targets are terminals of the caller's own environment, \"main\"\n" +
				"krad: hint: to reach a terminal of \"dev\", run krad in one of its terminals\n"},
		{nil, []string{"read", "main:2"},
			"krad: error: target \"main:2\" names environment \"main\", but targets are terminals of the caller's own environment, and krad is not in one of krad-ade's terminals (KRAD_ADE_TERMINAL is not set)\n" +
				"krad: hint: run krad in a terminal of that environment, and give the number alone, like 2\n"},
		{nil, []string{"wait", "two"},
			"krad: error: target \"two\": a target is a terminal number, like 2, or environment:number, like main:2\nkrad: hint: run 'krad wait --help'\n"},
		{nil, []string{"check"},
			"krad: error: krad check needs a target: a target is a terminal number, like 2, or environment:number, like main:2\nkrad: hint: run 'krad check --help'\n"},
		{nil, []string{"close", "2", "3"},
			"krad: error: krad close takes one target, and \"3\" is one too many\nkrad: hint: run 'krad close --help'\n"},
	}
	for _, tt := range tests {
		out, errOut, code := runAs(t, "krad", tt.env, nil, tt.args...)
		if out != "" || errOut != tt.wantErr || code != ExitUsage {
			t.Errorf("%v: got %q, stderr\n%s\nexit code %d; want stderr\n%s\nexit code %d", tt.args, out, errOut, code, tt.wantErr, ExitUsage)
		}
	}
}

// TestCommands runs each command against a bus with a test app behind it, and checks what krad
// put on the wire, what it printed and its exit code.
func TestCommands(t *testing.T) {
	lead := agent(1, "lead", "working", "claude")
	idle := agent(2, "worker", "idle", "fix flaky test")
	failed := agent(2, "worker", "failed", "fix flaky test", 1)
	done := agent(2, "worker", "done", "fix flaky test", 0)
	evil := agent(3, "worker", "working", "it's \x1b]0;pwned\x07 red")
	asks := agent(2, "worker", "needs_input", "fix flaky test")
	asks.StateFrom, asks.Message = api.StateFromReported, "Claude needs your permission to use Bash \x1b[2J"
	two := []api.Agent{lead, idle}
	screen := api.Screen{Terminal: 2, Text: "$ go test\n\x1b[32mok\x1b[0m"}

	tests := []struct {
		name     string
		args     []string
		stdin    string
		answer   func(t *testing.T) api.Answer
		first    func(t *testing.T) api.Answer // the first request's answer, when set
		role     access.Role                   // the caller's; lead when zero
		wantReq  string
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{name: "list", args: []string{"list"}, answer: agents(two), wantReq: `"List"`,
			wantOut: "" +
				"TERMINAL  ROLE    STATE    FROM    TITLE\n" +
				"main:1    lead    working  screen  claude\n" +
				"main:2    worker  idle     screen  fix flaky test\n"},
		{name: "list --all", args: []string{"list", "--all"}, answer: agents(two), wantReq: `"ListAll"`,
			wantOut: "TERMINAL  ROLE    STATE    FROM    TITLE\nmain:1    lead    working  screen  claude\nmain:2    worker  idle     screen  fix flaky test\n"},
		{name: "list: exit codes, and titles escaped", args: []string{"list"}, answer: agents([]api.Agent{done, evil, agent(4, "shell", "failed", "", 130)}), wantReq: `"List"`,
			wantOut: "" +
				"TERMINAL  ROLE    STATE         FROM    TITLE\n" +
				"main:2    worker  done (0)      screen  fix flaky test\n" +
				`main:3    worker  working       screen  it's \x1b]0;pwned\a red` + "\n" +
				"main:4    shell   failed (130)  screen\n"},
		{name: "list: a state the agent reported, and its message", args: []string{"list"}, answer: agents([]api.Agent{asks}), wantReq: `"List"`,
			wantOut: "" +
				"TERMINAL  ROLE    STATE        FROM      TITLE\n" +
				`main:2    worker  needs_input  reported  fix flaky test · Claude needs your permission to use Bash \x1b[2J` + "\n"},
		{name: "list: none", args: []string{"list"}, answer: agents(nil), wantReq: `"List"`, wantOut: "TERMINAL  ROLE  STATE  FROM  TITLE\n"},
		{name: "list --json", args: []string{"list", "--json"}, answer: agents(two), wantReq: `"List"`,
			wantOut: jsonOf(t, two) + "\n"},
		{name: "list --json: none is []", args: []string{"list", "--json"}, answer: agents(nil), wantReq: `"List"`, wantOut: "[]\n"},
		{name: "list: an answer of another kind", args: []string{"list"}, answer: ok, wantReq: `"List"`,
			wantErr: "krad: error: List: the app answered Ok where Agents was expected\n" +
				"krad: hint: this krad and the app disagree about the answer: use the krad that came with this krad-ade\n",
			wantCode: ExitFailed},

		{name: "check", args: []string{"check", "2"}, answer: agentAnswer(idle), wantReq: `{"Check":{"target":2}}`,
			wantOut: "main:2 worker 'fix flaky test' idle\n"},
		{name: "check E:N --wait: a change", args: []string{"check", "main:2", "--wait", "90s"}, first: agentAnswer(idle), answer: agentAnswer(failed),
			wantReq: `{"Check":{"target":2}}` + "\n" + `{"Check":{"target":2,"wait_secs":90}}`, wantOut: "main:2 worker 'fix flaky test' failed (1)\n"},
		{name: "check --wait: no change exits 4, as wait does", args: []string{"check", "main:2", "--wait", "90s"}, answer: agentAnswer(idle),
			wantReq: `{"Check":{"target":2}}` + "\n" + `{"Check":{"target":2,"wait_secs":90}}`, wantOut: "main:2 worker 'fix flaky test' idle\n",
			wantErr:  "krad: error: main:2 did not change in 1m30s\nkrad: hint: wait longer (--wait 5m), or print the agent as it is now without --wait\n",
			wantCode: ExitTimedOut},
		{name: "check --wait rounds up to whole seconds", args: []string{"check", "2", "--wait", "1500ms"}, first: agentAnswer(done), answer: agentAnswer(idle),
			wantReq: `{"Check":{"target":2}}` + "\n" + `{"Check":{"target":2,"wait_secs":2}}`, wantOut: "main:2 worker 'fix flaky test' idle\n"},
		{name: "check --wait 30m", args: []string{"check", "2", "--wait=30m"}, first: agentAnswer(done), answer: agentAnswer(idle),
			wantReq: `{"Check":{"target":2}}` + "\n" + `{"Check":{"target":2,"wait_secs":1800}}`, wantOut: "main:2 worker 'fix flaky test' idle\n"},
		{name: "check: a quote in the title", args: []string{"check", "3"}, answer: agentAnswer(evil),
			wantReq: `{"Check":{"target":3}}`, wantOut: `main:3 worker 'it\'s \x1b]0;pwned\a red' working` + "\n"},
		{name: "check --json", args: []string{"check", "2", "--json"}, answer: agentAnswer(failed),
			wantReq: `{"Check":{"target":2}}`, wantOut: jsonOf(t, failed) + "\n"},
		{name: "check --wait over 30m", args: []string{"check", "2", "--wait", "31m"},
			wantErr:  "krad: error: invalid argument \"31m\" for \"--wait\" flag: must be at most 30m\nkrad: hint: run 'krad check --help'\n",
			wantCode: ExitUsage},
		{name: "check --wait 0", args: []string{"check", "2", "--wait", "0s"},
			wantErr: "krad: error: invalid argument \"0s\" for \"--wait\" flag: must be more than 0\nkrad: hint: run 'krad check --help'\n", wantCode: ExitUsage},
		{name: "check --wait soon", args: []string{"check", "2", "--wait", "soon"},
			wantErr: "krad: error: invalid argument \"soon\" for \"--wait\" flag: must be a duration like 30s, 5m or 1h\nkrad: hint: run 'krad check --help'\n", wantCode: ExitUsage},
		{name: "check: not found", args: []string{"check", "9"}, answer: errAnswer(api.CodeNotFound, "main has no terminal 9"),
			wantReq: `{"Check":{"target":9}}`, wantErr: "krad: error: Check: the app answered not_found: main has no terminal 9\n" +
				"krad: hint: krad list --all shows the terminals of this environment\n", wantCode: ExitFailed},
		{name: "send: conflict", args: []string{"send", "2", "hi"}, answer: errAnswer(api.CodeConflict, "cannot send to main:2: its process has exited (done)"),
			wantReq: `{"Send":{"target":2,"text":"hi"}}`, wantErr: "krad: error: Send: the app answered conflict: cannot send to main:2: its process has exited (done)\n" +
				"krad: hint: krad list --all shows each terminal's state; krad read T shows what an ended one printed\n", wantCode: ExitFailed},
		{name: "read: the environment is down", args: []string{"read", "2"}, answer: errAnswer(api.CodeUnavailable, "environment main is down; the app is bringing it back"),
			wantReq: `{"Read":{"target":2}}`, wantErr: "krad: error: Read: the app answered unavailable: environment main is down; the app is bringing it back\n" +
				"krad: hint: try again in a moment; krad watch says when the environment is back\n", wantCode: ExitFailed},
		{name: "read: the bus dropped the connection", args: []string{"read", "2"},
			answer: func(*testing.T) api.Answer {
				return api.ErrorAnswer(api.Dropped("it was holding too many connections"))
			},
			wantReq: `{"Read":{"target":2}}`, wantErr: "krad: error: Read: the app answered unavailable: the bus dropped this connection before it read its line: it was holding too many connections\n" +
				"krad: hint: try again in a moment; if it keeps happening, krad-ade's log says which way in (its port, or an SSH host's forward) is flooded\n", wantCode: ExitFailed},
		{name: "spawn: the environment is at its limit of terminals", args: []string{"spawn", "--", "sh"},
			answer:  errAnswer(api.CodeConflict, "environment main has 1000 terminals, the most the app follows: close some (krad close T) first"),
			wantReq: `{"Spawn":{"title":"sh","command":["sh"]}}`,
			wantErr: "krad: error: Spawn: the app answered conflict: environment main has 1000 terminals, the most the app follows: close some (krad close T) first\n" +
				"krad: hint: krad list --all shows this environment's terminals and their states, to choose which to close\n", wantCode: ExitFailed},
		{name: "variants pick: no identity", args: []string{"variants", "pick", "fix-1"},
			answer:  reasonAnswer(api.CodeConflict, api.ReasonNoIdentity, "a squash makes a commit in /home/u/app, and git there has no identity to make it with: user.name or user.email is not set (git: fatal: no email was given and auto-detection is disabled); nothing was changed. Set them …"),
			wantReq: `{"PickVariant":{"group":"fix-1"}}`,
			wantErr: "krad: error: PickVariant: the app answered conflict: a squash makes a commit in /home/u/app, and git there has no identity to make it with: user.name or user.email is not set (git: fatal: no email was given and auto-detection is disabled); nothing was changed. Set them …\n" +
				"krad: hint: set them where the repository is (on an SSH host, there): git config --global user.email you@example.com; git config --global user.name 'Your Name'; then pick again\n", wantCode: ExitFailed},
		{name: "variants pick: files in the way", args: []string{"variants", "pick", "fix-1", "--how", "apply"},
			answer:  reasonAnswer(api.CodeConflict, api.ReasonInTheWay, "the pick of variant fix-1 would write over 1 file in the main checkout /home/u/app, none of which it may replace (…): .env; nothing was changed. Move them …"),
			wantReq: `{"PickVariant":{"group":"fix-1","how":"apply"}}`,
			wantErr: "krad: error: PickVariant: the app answered conflict: the pick of variant fix-1 would write over 1 file in the main checkout /home/u/app, none of which it may replace (…): .env; nothing was changed. Move them …\n" +
				"krad: hint: git status --ignored in the main checkout shows its untracked and ignored files: move the ones named out of the way (or commit them), then pick again\n", wantCode: ExitFailed},
		{name: "variants pick: a message with an escape", args: []string{"variants", "pick", "fix-1", "--message", "fix\x1b]52;c;aGk=\x07"},
			wantErr: "krad: error: --message holds the control character U+001B at byte 3 (an escape, a carriage return or a NUL is not text): a message is lines of text, tabs and newlines its only control characters\n" +
				"krad: hint: run 'krad variants pick --help'\n", wantCode: ExitUsage},
		{name: "spawn --agent", args: []string{"spawn", "--agent", "claude", "--prompt", "fix it"}, answer: agentAnswer(agent(2, "worker", "working", "claude")),
			wantReq: `{"Spawn":{"title":"claude","agent":"claude","prompt":"fix it"}}`, wantOut: "main:2 worker 'claude' working\n"},
		{name: "spawn --agent and a command", args: []string{"spawn", "--agent", "claude", "--", "sh"},
			wantErr: "krad: error: krad spawn takes --agent or a command after --, not both\nkrad: hint: run 'krad spawn --help'\n", wantCode: ExitUsage},
		{name: "spawn --group: not a repository", args: []string{"spawn", "--group", "g", "--", "sh"},
			answer:   errAnswer(api.CodeUnavailable, `"/home/u/notes" is in no git repository: groups are git worktrees; run `+"`git init`"+` there and commit, or give the environment a folder in a repository`),
			wantReq:  `{"Spawn":{"title":"sh","command":["sh"],"group":"g"}}`,
			wantErr:  "krad: error: Spawn: the app answered unavailable: \"/home/u/notes\" is in no git repository: groups are git worktrees; run `git init` there and commit, or give the environment a folder in a repository\n",
			wantCode: ExitFailed},

		{name: "wait: idle", args: []string{"wait", "2"}, answer: agentAnswer(idle),
			wantReq: `{"Wait":{"target":2,"timeout_secs":1800}}`, wantOut: "main:2 worker 'fix flaky test' idle\n"},
		{name: "wait: done", args: []string{"wait", "main:2", "--timeout", "5m"}, answer: agentAnswer(done),
			wantReq: `{"Wait":{"target":2,"timeout_secs":300}}`, wantOut: "main:2 worker 'fix flaky test' done (0)\n"},
		{name: "wait: needs input", args: []string{"wait", "2"}, answer: agentAnswer(agent(2, "worker", "needs_input", "fix flaky test")),
			wantReq: `{"Wait":{"target":2,"timeout_secs":1800}}`, wantOut: "main:2 worker 'fix flaky test' needs_input\n"},
		{name: "wait: failed", args: []string{"wait", "2"}, answer: agentAnswer(failed),
			wantReq: `{"Wait":{"target":2,"timeout_secs":1800}}`, wantOut: "main:2 worker 'fix flaky test' failed (1)\n",
			wantErr:  "krad: error: main:2 failed (exit code 1)\nkrad: hint: see its last output with 'krad read 2'\n",
			wantCode: ExitFailed},
		{name: "wait --json: failed", args: []string{"wait", "2", "--json"}, answer: agentAnswer(failed),
			wantReq: `{"Wait":{"target":2,"timeout_secs":1800}}`, wantOut: jsonOf(t, failed) + "\n",
			wantErr:  "krad: error: main:2 failed (exit code 1)\nkrad: hint: see its last output with 'krad read 2'\n",
			wantCode: ExitFailed},
		{name: "wait: closed", args: []string{"wait", "2"}, answer: agentAnswer(agent(2, "worker", "closed", "fix flaky test")),
			wantReq: `{"Wait":{"target":2,"timeout_secs":1800}}`, wantOut: "main:2 worker 'fix flaky test' closed\n",
			wantErr: "krad: error: main:2 was closed (no exit code)\n", wantCode: ExitFailed},
		{name: "wait: timed out", args: []string{"wait", "2", "--timeout", "90s"}, answer: timedOut,
			wantReq:  `{"Wait":{"target":2,"timeout_secs":90}}`,
			wantErr:  "krad: error: terminal 2 did not settle within 1m30s: the app answered TimedOut\nkrad: hint: wait longer with --timeout, or see what it is doing with 'krad read 2'\n",
			wantCode: ExitTimedOut},

		{name: "read", args: []string{"read", "2"}, answer: screenAnswer(screen),
			wantReq: `{"Read":{"target":2}}`, wantOut: "$ go test\n\x1b[32mok\x1b[0m\n"},
		{name: "read --lines", args: []string{"read", "2", "--lines", "5"}, answer: screenAnswer(api.Screen{Terminal: 2, Text: "a\nb\n"}),
			wantReq: `{"Read":{"target":2,"lines":5}}`, wantOut: "a\nb\n"},
		{name: "read: an empty screen", args: []string{"read", "2"}, answer: screenAnswer(api.Screen{Terminal: 2}),
			wantReq: `{"Read":{"target":2}}`, wantOut: ""},
		{name: "read --json", args: []string{"read", "2", "--json"}, answer: screenAnswer(screen),
			wantReq: `{"Read":{"target":2}}`, wantOut: jsonOf(t, screen) + "\n"},
		{name: "read --lines 0", args: []string{"read", "2", "--lines", "0"},
			wantErr: "krad: error: invalid argument \"0\" for \"--lines\" flag: must be a whole number, 1 or more\nkrad: hint: run 'krad read --help'\n", wantCode: ExitUsage},

		{name: "send", args: []string{"send", "2", "run", "the", "tests"}, wantReq: `{"Send":{"target":2,"text":"run the tests"}}`},
		{name: "send --no-enter", args: []string{"send", "--no-enter", "main:2", "y"}, wantReq: `{"Send":{"target":2,"text":"y","enter":false}}`},
		{name: "send: text after --", args: []string{"send", "2", "--", "-v"}, wantReq: `{"Send":{"target":2,"text":"-v"}}`},
		{name: "send: text from stdin", args: []string{"send", "2", "-"}, stdin: "line one\nline two\n",
			wantReq: `{"Send":{"target":2,"text":"line one\nline two"}}`},
		{name: "send: - among other words", args: []string{"send", "2", "-", "x"}, stdin: "unread", wantReq: `{"Send":{"target":2,"text":"- x"}}`},
		{name: "send: forbidden", args: []string{"send", "2", "hi"}, role: access.RoleTerminal,
			wantErr: "krad: error: Send: the app answered forbidden: only a session's lead directs workers (Send); this terminal is not a lead\n" +
				"krad: hint: krad list --all --json shows each terminal's role and session\n", wantCode: ExitUnauthorized},
		{name: "send: no text", args: []string{"send", "2"},
			wantErr: "krad: error: krad send needs a target and the text to send\nkrad: hint: run 'krad send --help'\n", wantCode: ExitUsage},
		{name: "send: too long for a request line", args: []string{"send", "2", strings.Repeat(`"`, 40000)},
			wantErr: "krad: error: Send: the request is 80158 bytes, and the bus reads at most 65536\nkrad: hint: shorten the text you give it\n", wantCode: ExitUsage},

		{name: "spawn", args: []string{"spawn", "--", "claude", "--resume"}, answer: agentAnswer(agent(3, "worker", "starting", "claude")),
			wantReq: `{"Spawn":{"title":"claude","command":["claude","--resume"]}}`, wantOut: "main:3 worker 'claude' starting\n"},
		{name: "spawn with everything", args: []string{"spawn", "--title", "fix flaky test", "--group", "flaky", "--prompt", "make it pass", "--", "/usr/local/bin/claude"},
			answer:  agentAnswer(agent(3, "worker", "working", "fix flaky test")),
			wantReq: `{"Spawn":{"title":"fix flaky test","command":["/usr/local/bin/claude"],"prompt":"make it pass","group":"flaky"}}`,
			wantOut: "main:3 worker 'fix flaky test' working\n"},
		{name: "spawn --json", args: []string{"spawn", "--json", "--", "sh"}, answer: agentAnswer(agent(3, "worker", "starting", "sh")),
			wantReq: `{"Spawn":{"title":"sh","command":["sh"]}}`, wantOut: jsonOf(t, agent(3, "worker", "starting", "sh")) + "\n"},
		{name: "spawn: a tab in the title", args: []string{"spawn", "--title", "fix\tbug", "--", "claude"},
			wantErr: "krad: error: title holds the control character U+0009 at byte 3 (a tab, a newline or an escape is not text): a title is one line of text\nkrad: hint: run 'krad spawn --help'\n", wantCode: ExitUsage},
		{name: "spawn: the default title is the program's name", args: []string{"spawn", "--", "/opt/bin/my\ntool"}, answer: agentAnswer(agent(3, "worker", "starting", "my tool")),
			wantReq: `{"Spawn":{"title":"my tool","command":["/opt/bin/my\ntool"]}}`, wantOut: "main:3 worker 'my tool' starting\n"},
		{name: "spawn: no command", args: []string{"spawn", "--title", "x"},
			wantErr: "krad: error: krad spawn needs a command after --, like: krad spawn -- claude, or an agent profile: --agent claude\nkrad: hint: run 'krad spawn --help'\n", wantCode: ExitUsage},

		{name: "close", args: []string{"close", "2"}, wantReq: `{"Close":{"target":2}}`},
		{name: "close-session", args: []string{"close-session"}, wantReq: `"CloseSession"`},
		{name: "close-session: an argument", args: []string{"close-session", "2"},
			wantErr: "krad: error: krad close-session takes no arguments, and \"2\" is not one of its commands\nkrad: hint: run 'krad close-session --help'\n", wantCode: ExitUsage},
		{name: "close: an answer of another kind", args: []string{"close", "2"}, answer: agentAnswer(idle), wantReq: `{"Close":{"target":2}}`,
			wantErr: "krad: error: Close: the app answered Agent where Ok was expected\n" +
				"krad: hint: this krad and the app disagree about the answer: use the krad that came with this krad-ade\n", wantCode: ExitFailed},

		{name: "tool: the extensions", args: []string{"tool"}, answer: extAnswer(api.ExtensionAnswer{Extensions: &[]string{"tracker", "docs"}}),
			wantReq: `{"ExtensionTool":{}}`, wantOut: "tracker\ndocs\n"},
		{name: "tool: the list", args: []string{"tool", "tracker"}, answer: extAnswer(api.ExtensionAnswer{Extension: "tracker", Tools: []api.ToolInfo{
			{Name: "create_issue", Description: "Create an issue.\nMore words."}, {Name: "\x1b[2Jwipe", Title: "Wipe"}}}),
			wantReq: `{"ExtensionTool":{"extension":"tracker"}}`,
			wantOut: "TOOL          DESCRIPTION\ncreate_issue  Create an issue.\n\\x1b[2Jwipe   Wipe\n"},
		{name: "tool: a call with --arg", args: []string{"tool", "tracker", "create_issue", "--arg", "title=flaky TestRetry", "--arg", "labels:=[\"ci\"]"},
			answer: extAnswer(api.ExtensionAnswer{Extension: "tracker", Result: &api.ToolResult{Content: []json.RawMessage{
				json.RawMessage(`{"type":"text","text":"created #12\n\u001b[31mred\tcell"}`), json.RawMessage(`{"type":"image","mimeType":"image/png","data":"AAAA"}`)}}}),
			wantReq: `{"ExtensionTool":{"extension":"tracker","tool":"create_issue","arguments":{"title":"flaky TestRetry","labels":["ci"]}}}`,
			wantOut: "created #12\n\\x1b[31mred\tcell\n[image image/png, 4 bytes base64]\n"},
		{name: "tool: --json ARGS, and the tool's own error", args: []string{"tool", "tracker", "create_issue", "--json", `{"title": 5}`},
			answer:  extAnswer(api.ExtensionAnswer{Extension: "tracker", Result: &api.ToolResult{IsError: true, Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"title must be text"}`)}}}),
			wantReq: `{"ExtensionTool":{"extension":"tracker","tool":"create_issue","arguments":{"title":5}}}`,
			wantOut: "title must be text\n",
			wantErr: "krad: error: tool \"create_issue\" of extension tracker reported an error\nkrad: hint: what it printed says why; krad tool tracker shows what its tools take\n", wantCode: ExitFailed},
		{name: "tool: forbidden", args: []string{"tool", "tracker"}, answer: errAnswer(api.CodeForbidden, "extension tracker is not lent to environment build"),
			wantReq: `{"ExtensionTool":{"extension":"tracker"}}`,
			wantErr: "krad: error: ExtensionTool: the app answered forbidden: extension tracker is not lent to environment build\n" +
				"krad: hint: config.toml, on the computer that runs krad-ade, says which environments may use each extension: add this one to the extension's environments\n",
			wantCode: ExitUnauthorized},
		{name: "tool: arguments without a tool", args: []string{"tool", "tracker", "--arg", "a=b"},
			wantErr: "krad: error: arguments need a tool: krad tool EXT TOOL --arg K=V\nkrad: hint: run 'krad tool --help'\n", wantCode: ExitUsage},
		{name: "tool: a bad extension name", args: []string{"tool", "Tracker"},
			wantErr: "krad: error: extension must be 1 to 40 of a-z, 0-9, - and _, not \"Tracker\"\nkrad: hint: run 'krad tool --help'\n", wantCode: ExitUsage},
		{name: "worktree sync --rebase", args: []string{"worktree", "sync", "fix", "--rebase"},
			answer: func(t *testing.T) api.Answer {
				return answer(t, api.AnswerSynced, worktree.Synced{Group: "fix", Branch: "krad/fix", How: "rebase", Onto: "3f2a9c1aaaa", OntoName: "main", Old: "1", New: "5d0e2aabbbb", Commits: 3, Dropped: 1})
			},
			wantReq: `{"SyncGroup":{"group":"fix","how":"rebase"}}`,
			wantOut: "group fix: krad/fix rebased onto main (3f2a9c1): 2 commits replayed, now at 5d0e2aa (1 dropped: main (3f2a9c1) had their changes)\n"},
		{name: "worktree sync: merge by default", args: []string{"worktree", "sync", "fix"},
			answer: func(t *testing.T) api.Answer {
				return answer(t, api.AnswerSynced, worktree.Synced{Group: "fix", Branch: "krad/fix", How: "merge", Onto: "3f2a9c1aaaa", OntoName: "main", Old: "1", New: "9e1b7c0cccc"})
			},
			wantReq: `{"SyncGroup":{"group":"fix","how":"merge"}}`,
			wantOut: "group fix: main (3f2a9c1) merged into krad/fix (9e1b7c0)\n"},
		{name: "worktree sync: a conflict", args: []string{"worktree", "sync", "fix"},
			answer:  errAnswer(api.CodeConflict, "syncing group fix conflicts: merging main into krad/fix conflicts in 1 file: README. Nothing was changed"),
			wantReq: `{"SyncGroup":{"group":"fix","how":"merge"}}`,
			wantErr: "krad: error: SyncGroup: the app answered conflict: syncing group fix conflicts: merging main into krad/fix conflicts in 1 file: README. Nothing was changed\n", wantCode: ExitFailed},
		{name: "worktree sync: both ways", args: []string{"worktree", "sync", "fix", "--merge", "--rebase"},
			wantErr: "krad: error: --merge or --rebase, not both\nkrad: hint: run 'krad worktree sync --help'\n", wantCode: ExitUsage},
		{name: "push", args: []string{"push", "fix"},
			answer: func(t *testing.T) api.Answer {
				return answer(t, api.AnswerPushed, worktree.Pushed{Group: "fix", Branch: "krad/fix", Remote: "origin", Commit: "9e1b7c0cccc", Uncommitted: 2})
			},
			wantReq: `{"PushGroup":{"group":"fix"}}`,
			wantOut: "pushed krad/fix (9e1b7c0) to origin\n",
			wantErr: "krad: warning: group fix has 2 files not committed, which the push did not send: commit them, then push again\n"},
		{name: "pr --title --draft", args: []string{"pr", "fix", "--title", "-x: fix", "--draft", "--remote", "up"},
			answer: func(t *testing.T) api.Answer {
				return answer(t, api.AnswerPushed, worktree.Pushed{Group: "fix", Branch: "krad/fix", Remote: "up", Commit: "9e1b7c0cccc", PR: "https://github.com/me/app/pull/7"})
			},
			wantReq: `{"PushGroup":{"group":"fix","remote":"up","pr":true,"title":"-x: fix","draft":true}}`,
			wantOut: "pushed krad/fix (9e1b7c0) to up; pull request https://github.com/me/app/pull/7\n"},
		{name: "push: a worker may not", args: []string{"push", "fix"}, role: access.RoleTerminal,
			wantErr: "krad: error: PushGroup: the app answered forbidden: only a session's lead (or the person, in krad-ade's UI) sends a group's work out (PushGroup); this terminal is not a lead\n" +
				"krad: hint: ask your session's lead to push, or push from krad-ade's UI: p (push) or P (pull request) on the group's agent\n", wantCode: ExitUnauthorized},
		{name: "pr: no gh", args: []string{"pr", "fix"},
			answer:  errAnswer(api.CodeUnavailable, "a pull request is opened with gh, GitHub's CLI, which is not installed where the repository is"),
			wantReq: `{"PushGroup":{"group":"fix","pr":true}}`,
			wantErr: "krad: error: PushGroup: the app answered unavailable: a pull request is opened with gh, GitHub's CLI, which is not installed where the repository is\n", wantCode: ExitFailed},
		{name: "variants pick --pr", args: []string{"variants", "pick", "set-2", "--pr", "--title", "T"},
			first: func(t *testing.T) api.Answer {
				return answer(t, api.AnswerPicked, api.Picked{Group: "set-2", How: "branch", Branch: "krad/set-2", Snapshot: "s", Closed: []string{"main:3"}})
			},
			answer: func(t *testing.T) api.Answer {
				return answer(t, api.AnswerPushed, worktree.Pushed{Group: "set-2", Branch: "krad/set-2", Remote: "origin", Commit: "9e1b7c0cccc", PR: "https://github.com/me/app/pull/8"})
			},
			wantReq: `{"PickVariant":{"group":"set-2","how":"branch"}}` + "\n" + `{"PushGroup":{"group":"set-2","pr":true,"title":"T"}}`,
			wantOut: "picked set-2 (branch); closed 1 other terminals; their groups retired with their work kept\npushed krad/set-2 (9e1b7c0) to origin; pull request https://github.com/me/app/pull/8\n"},
		{name: "variants pick --pr --how squash", args: []string{"variants", "pick", "set-2", "--pr", "--how", "squash"},
			wantErr: "krad: error: --pr makes the winner's branch the result: it goes with --how branch (its default), not \"squash\"\nkrad: hint: run 'krad variants pick --help'\n", wantCode: ExitUsage},
		{name: "report", args: []string{"report", "idle"}, wantReq: `{"Report":{"state":"idle"}}`},
		{name: "report --message", args: []string{"report", "needs_input", "--message", "which file?"},
			wantReq: `{"Report":{"state":"needs_input","message":"which file?"}}`},
		{name: "report: an unknown state", args: []string{"report", "sleeping"},
			wantErr:  "krad: error: unknown state \"sleeping\": the states are working, idle, needs_input, done, failed\nkrad: hint: run 'krad report --help'\n",
			wantCode: ExitUsage},
		{name: "report: no state", args: []string{"report"},
			wantErr:  "krad: error: krad report needs one state: working, idle, needs_input, done, failed\nkrad: hint: run 'krad report --help'\n",
			wantCode: ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := &testApp{role: tt.role}
			if tt.answer != nil {
				app.answer = tt.answer(t)
			}
			if tt.first != nil {
				app.first = tt.first(t)
			}
			env, _ := startApp(t, app)
			out, errOut, code := runAs(t, "krad", env, strings.NewReader(tt.stdin), tt.args...)
			if out != tt.wantOut {
				t.Errorf("got stdout\n%q\nwant\n%q", out, tt.wantOut)
			}
			if errOut != tt.wantErr {
				t.Errorf("got stderr\n%s\nwant\n%s", errOut, tt.wantErr)
			}
			if code != tt.wantCode {
				t.Errorf("got exit code %d, want %d", code, tt.wantCode)
			}
			var want []string
			for _, req := range strings.Split(tt.wantReq, "\n") {
				if req != "" {
					want = append(want, "Terminal main:4 "+req)
				}
			}
			if got := app.requests(); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("the app got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// Canned answers.
func agents(a []api.Agent) func(*testing.T) api.Answer {
	return func(t *testing.T) api.Answer { return answer(t, "Agents", a) }
}
func agentAnswer(a api.Agent) func(*testing.T) api.Answer {
	return func(t *testing.T) api.Answer { return answer(t, "Agent", a) }
}
func screenAnswer(s api.Screen) func(*testing.T) api.Answer {
	return func(t *testing.T) api.Answer { return answer(t, "Screen", s) }
}
func errAnswer(code api.ErrorCode, msg string) func(*testing.T) api.Answer {
	return func(*testing.T) api.Answer { return api.ErrorAnswer(api.Errorf(code, "%s", msg)) }
}
func reasonAnswer(code api.ErrorCode, reason api.ErrorReason, msg string) func(*testing.T) api.Answer {
	return func(*testing.T) api.Answer { return api.ErrorAnswer(api.Errorf(code, "%s", msg).WithReason(reason)) }
}
func ok(*testing.T) api.Answer { return api.OK }

func extAnswer(a api.ExtensionAnswer) func(*testing.T) api.Answer {
	return func(t *testing.T) api.Answer { return answer(t, api.AnswerExtension, a) }
}
func timedOut(*testing.T) api.Answer { return api.TimedOut }

// TestListAsClient: outside the app's terminals krad lists as a Client, through api.json.
func TestListAsClient(t *testing.T) {
	app := &testApp{answer: answer(t, "Agents", []api.Agent{agent(1, "lead", "working", "claude")})}
	env, tok := startApp(t, app)
	d := Discovered{Path: "/home/u/.config/krad-ade/api.json", Endpoint: env[varEndpoint], Token: tok, PID: 4321}
	out, errOut, code := run(t, map[string]string{"HOME": "/home/u"}, found(d), "list", "--all")
	if want := "TERMINAL  ROLE  STATE    FROM    TITLE\nmain:1    lead  working  screen  claude\n"; out != want || errOut != "" || code != ExitOK {
		t.Errorf("got %q, %q, exit code %d; want %q", out, errOut, code, want)
	}
	if got, want := strings.Join(app.requests(), "\n"), `Client "ListAll"`; got != want {
		t.Errorf("the app got %s, want %s", got, want)
	}
}

func TestWatch(t *testing.T) {
	snapshot := []api.Agent{agent(1, "lead", "working", "claude"), agent(2, "worker", "working", "fix flaky test")}
	stream := func(t *testing.T) []api.Answer {
		return []api.Answer{
			answer(t, "Agents", snapshot),
			answer(t, "AgentEvent", api.AgentEvent{Kind: api.AgentChanged, Agent: agent(2, "worker", "idle", "fix flaky test")}),
			answer(t, "AgentEvent", api.AgentEvent{Kind: api.AgentAdded, Agent: agent(3, "worker", "starting", "review")}),
			answer(t, "SomethingNew", map[string]int{"x": 1}),
			answer(t, "AgentEvent", api.AgentEvent{Kind: api.AgentRemoved, Agent: agent(3, "worker", "closed", "review")}),
			answer(t, "AppEvent", api.AppEvent{Kind: api.EnvironmentDown, Environment: "main", Message: "ssh: connection lost"}),
			answer(t, "AppEvent", api.AppEvent{Kind: api.EnvironmentUp, Environment: "main"}),
			answer(t, "AppEvent", api.AppEvent{Kind: api.EnvironmentRemoved, Environment: "build", Message: "its terminals run on"}),
			answer(t, "AppEvent", api.AppEvent{Kind: api.EnvironmentAdded, Environment: "build"}),
		}
	}
	const ended = "krad: error: SubscribeAgents: the app ended the stream\n" +
		"krad: hint: krad-ade stopped or restarted: start it, then run this again\n"

	t.Run("people", func(t *testing.T) {
		app := &testApp{stream: stream(t)}
		env, _ := startApp(t, app)
		out, errOut, code := runAs(t, "krad", env, nil, "watch")
		want := "" +
			"TERMINAL  ROLE    STATE    FROM    TITLE\n" +
			"main:1    lead    working  screen  claude\n" +
			"main:2    worker  working  screen  fix flaky test\n" +
			"main:2 worker 'fix flaky test' idle\n" +
			"main:3 added worker 'review' starting\n" +
			"main:3 removed worker 'review' closed\n" +
			"environment main down: ssh: connection lost\n" +
			"environment main up\n" +
			"environment build removed: its terminals run on\n" +
			"environment build added\n"
		if out != want {
			t.Errorf("got stdout\n%s\nwant\n%s", out, want)
		}
		if errOut != ended || code != ExitNoAPI {
			t.Errorf("got stderr\n%s\nexit code %d; want\n%s\nexit code %d", errOut, code, ended, ExitNoAPI)
		}
		if got := strings.Join(app.requests(), "\n"); got != `Terminal main:4 "SubscribeAgents"` {
			t.Errorf("the app got %s", got)
		}
	})
	t.Run("json", func(t *testing.T) {
		msgs := stream(t)
		app := &testApp{stream: msgs}
		env, _ := startApp(t, app)
		out, errOut, code := runAs(t, "krad", env, nil, "watch", "--json")
		var want strings.Builder
		for _, m := range msgs {
			want.WriteString(jsonOf(t, m) + "\n")
		}
		if out != want.String() {
			t.Errorf("got stdout\n%s\nwant\n%s", out, want.String())
		}
		if !strings.HasPrefix(out, `{"Agents":[{"environment":"main","terminal":1,`) {
			t.Errorf("got stdout\n%s\nwant the snapshot's line first, as sent", out)
		}
		if errOut != ended || code != ExitNoAPI {
			t.Errorf("got stderr\n%s\nexit code %d; want\n%s\nexit code %d", errOut, code, ended, ExitNoAPI)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		app := &testApp{stream: stream(t)[:1], hold: true, sent: make(chan struct{})}
		env, _ := startApp(t, app)
		ctx, cancel := context.WithCancel(context.Background())
		out, errOut := newNotifyWriter(), newNotifyWriter()
		exit := make(chan int)
		go func() {
			exit <- Run(ctx, []string{"krad", "watch", "--json"}, MapEnv(env), nil, out, errOut, Options{})
		}()
		<-out.written // the snapshot, as soon as it came: a status bar must not wait for more
		cancel()
		if code := <-exit; code != ExitOK || errOut.String() != "" {
			t.Errorf("got exit code %d, stderr %q; want 0 and none", code, errOut.String())
		}
		if !strings.HasPrefix(out.String(), `{"Agents":`) {
			t.Errorf("got stdout %q", out.String())
		}
	})
	t.Run("refused", func(t *testing.T) {
		endpoint, tok := startBus(t, 4321) // no app behind it: it knows no terminal
		env := map[string]string{varEndpoint: endpoint, varToken: tok.Reveal(), varTerminal: "main:4"}
		out, errOut, code := runAs(t, "krad", env, nil, "watch")
		want := "krad: error: SubscribeAgents: the app answered forbidden: main:4 is not a terminal of this app\n"
		if out != "" || errOut != want || code != ExitUnauthorized {
			t.Errorf("got %q, stderr\n%s\nexit code %d; want stderr\n%s\nexit code %d", out, errOut, code, want, ExitUnauthorized)
		}
	})
	t.Run("a silent peer", func(t *testing.T) {
		defer func(d time.Duration) { snapshotWait = d }(snapshotWait)
		snapshotWait = 200 * time.Millisecond
		app := &testApp{hang: true}
		env, _ := startApp(t, app)
		_, errOut, code := runAs(t, "krad", env, nil, "watch")
		want := "krad: error: no agents bus answers at " + env[varEndpoint] + ": no answer within 200ms\n"
		if !strings.HasPrefix(errOut, want) || code != ExitNoAPI {
			t.Errorf("got stderr\n%s\nexit code %d; want\n%s\nexit code %d", errOut, code, want, ExitNoAPI)
		}
	})
}

// TestWaitOutlastsTheDeadline: krad wait does not leave before the app's own answer, which comes
// past the timeout: leaving would cancel the Wait.
func TestWaitOutlastsTheDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("waits a few seconds")
	}
	app := &testApp{hang: true} // the bus answers TimedOut at its deadline, the timeout plus 1 s
	env, _ := startApp(t, app)
	start := time.Now()
	_, errOut, code := runAs(t, "krad", env, nil, "wait", "2", "--timeout", "1s")
	if took := time.Since(start); code != ExitTimedOut || took < 2*time.Second {
		t.Errorf("got exit code %d after %s, stderr\n%s\nwant %d after the bus's 2s", code, took, errOut, ExitTimedOut)
	}
	if !strings.Contains(errOut, "did not settle within 1s") {
		t.Errorf("got stderr\n%s", errOut)
	}
}

// TestForbiddenWithoutATerminal: krad that found the bus through the variables but has no
// KRAD_ADE_TERMINAL (a shell on an SSH host with the endpoint exported, say) calls as a Client;
// when that is refused, the hint says to set the terminal, not that a Client may list agents.
func TestForbiddenWithoutATerminal(t *testing.T) {
	app := &testApp{answer: errAnswer(api.CodeForbidden, "a connection through the forward of SSH environment build cannot call as Client")(t)}
	env, _ := startApp(t, app)
	delete(env, varTerminal)
	_, errOut, code := runAs(t, "krad", env, nil, "list")
	want := "krad: error: List: the app answered forbidden: a connection through the forward of SSH environment build cannot call as Client\n" +
		"krad: hint: KRAD_ADE_TERMINAL is not set, so krad calls as a program outside the app: run krad in one of krad-ade's terminals, where the app sets it\n"
	if errOut != want || code != ExitUnauthorized {
		t.Errorf("got stderr\n%s\nexit code %d; want\n%s\nexit code %d", errOut, code, want, ExitUnauthorized)
	}
}

// TestSilentThroughTheForward: on an SSH host (a terminal of an environment other than main), a
// connection that opens and then hears nothing (a frozen SSH link: sshd's listener accepts, the
// app's end is silent) is said to be the SSH link to the app's computer, or the app, with what the
// app does about a link that stops answering; on this computer, it is not the bus.
func TestSilentThroughTheForward(t *testing.T) {
	defer func(d time.Duration) { snapshotWait = d }(snapshotWait)
	snapshotWait = 200 * time.Millisecond
	addr := silentPeer(t)
	tok, err := api.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		terminal, want, hint string
		code                 int
	}{
		{"build:4", "krad: error: SubscribeAgents: no answer within 200ms through the forward at " + addr +
			": the SSH link from this host to the computer that runs krad-ade is not answering, or the app is not\n", "connects again", ExitNoAPI},
		{"main:4", "krad: error: no agents bus answers at " + addr + ": no answer within 200ms\n", "start krad-ade", ExitNoAPI},
	} {
		env := map[string]string{varEndpoint: addr, varToken: tok.Reveal(), varTerminal: c.terminal}
		_, errOut, code := runAs(t, "krad", env, nil, "watch")
		if code != c.code || !strings.HasPrefix(errOut, c.want) || !strings.Contains(errOut, "\nkrad: hint: ") || !strings.Contains(errOut, c.hint) {
			t.Errorf("krad watch with a silent peer, as %s: exit %d,\n%s\nwant exit %d, %q and the hint %q", c.terminal, code, errOut, c.code, c.want, c.hint)
		}
	}
}
