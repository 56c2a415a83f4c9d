package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

func TestHelpAndUsage(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantOut  []string // parts of stdout
		wantErr  []string // parts of stderr
		wantCode int
	}{
		{"krad --help lists the commands", []string{"--help"},
			[]string{"Usage:\n  krad <command> [flags]\n", "\n  list             list the agents", "\n  close-session    close this lead's session",
				"\n  worktree create  make a group", "\n  groups           list this environment's groups", "\n  changes          print what a group changed",
				"\n  api              say hello", "\n  api info         print where", "\n  version          ", "Exit codes: 0 success"}, nil, ExitOK},
		{"krad worktree create --help", []string{"worktree", "create", "--help"}, []string{"  krad worktree create [NAME] [--base REF] [--branch B] [--json]\n", "--base REF"}, nil, ExitOK},
		{"krad changes --help", []string{"changes", "--help"}, []string{"  krad changes [T] [--group G] [--stat] [--paths P]… [--binary] [--json]\n", "git apply"}, nil, ExitOK},
		{"krad worktree create: a bad name", []string{"worktree", "create", "Fix/Retry"}, nil, []string{"krad: error: group name Fix/Retry: it has an upper-case letter"}, ExitUsage},
		{"krad changes: a target and a group", []string{"changes", "2", "--group", "g"}, nil, []string{"name a target or --group, not both"}, ExitUsage},
		{"krad -h", []string{"-h"}, []string{"Commands:"}, nil, ExitOK},
		{"krad api --help", []string{"api", "--help"},
			[]string{"Usage:\n  krad api [--json]\n  krad api <command> [flags]\n", "\n  info  print where", "      --json  "}, nil, ExitOK},
		{"krad api info --help", []string{"api", "info", "--help"},
			[]string{"  krad api info [--show-token] [--json]\n", "--show-token  also print the bus token"}, nil, ExitOK},
		{"krad version --help", []string{"version", "--help"}, []string{"krad version [--json]"}, nil, ExitOK},
		{"krad list --help", []string{"list", "--help"}, []string{"  krad list [--all] [--json]\n", "main:2    worker  needs_input  reported  fix flaky test · Claude needs", "      --all   "}, nil, ExitOK},
		{"krad watch --help", []string{"watch", "--help"}, []string{"  krad watch [--json]\n", "exits with 2"}, nil, ExitOK},
		{"krad check --help", []string{"check", "--help"}, []string{"  krad check T [--wait D] [--json]\n", "      --wait D  answer after"}, nil, ExitOK},
		{"krad wait --help", []string{"wait", "--help"}, []string{"  krad wait T… [--any | --all] [--timeout D] [--json]\n", "Exit codes: 0 every agent waited for is idle", "--timeout D"}, nil, ExitOK},
		{"krad read --help", []string{"read", "--help"}, []string{"  krad read T [--lines N] [--json]\n", "--lines N"}, nil, ExitOK},
		{"krad send --help", []string{"send", "--help"}, []string{"  krad send T TEXT… [--no-enter]\n", "--no-enter"}, nil, ExitOK},
		{"krad spawn --help", []string{"spawn", "--help"}, []string{"  krad spawn [--title T] [--group G] [--prompt P] [--json] (--agent A | -- CMD…)\n", "--title T   the worker's title T"}, nil, ExitOK},
		{"krad close --help", []string{"close", "--help"}, []string{"  krad close T\n"}, nil, ExitOK},
		{"krad close-session --help", []string{"close-session", "--help"}, []string{"  krad close-session\n"}, nil, ExitOK},
		{"krad report --help", []string{"report", "--help"}, []string{"  krad report STATE [--message M]\n", "working, idle, needs_input, done or failed"}, nil, ExitOK},
		{"krad alone prints the help on stderr", nil, nil, []string{"Usage:\n  krad <command> [flags]\n"}, ExitUsage},
		{"unknown command, quoted and cut", []string{"\x1b]0;pwned\x07" + strings.Repeat("a", 100)}, nil,
			[]string{`krad: error: unknown command "\x1b]0;pwned\a` + strings.Repeat("a", 40-len("\x1b]0;pwned\x07")) + `…"` + "\nkrad: hint: run 'krad --help'\n"}, ExitUsage},
		{"bad flag with control characters", []string{"--\x1b[2J"}, nil, []string{`krad: error: unknown flag: --\x1b[2J`}, ExitUsage},
		{"a flag needs no value", []string{"api", "--json=maybe"}, nil, []string{"krad: error: invalid argument \"maybe\" for \"--json\" flag"}, ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, nil, Options{}, tt.args...)
			for _, want := range tt.wantOut {
				if !strings.Contains(out, want) {
					t.Errorf("got stdout\n%s\nwant it to contain %q", out, want)
				}
			}
			if len(tt.wantOut) == 0 && out != "" {
				t.Errorf("got stdout\n%s\nwant none", out)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(errOut, want) {
					t.Errorf("got stderr\n%s\nwant it to contain %q", errOut, want)
				}
			}
			if len(tt.wantErr) == 0 && errOut != "" {
				t.Errorf("got stderr\n%s\nwant none", errOut)
			}
			if strings.ContainsAny(errOut, "\x1b\x07") {
				t.Errorf("got stderr %q, want no control characters", errOut)
			}
			if code != tt.wantCode {
				t.Errorf("got exit code %d, want %d", code, tt.wantCode)
			}
		})
	}
}

// TestSpawnHelpOffersWhatTheAppServes: the app serves groups, so spawn's help offers --group and
// says what it does.
func TestSpawnHelpOffersWhatTheAppServes(t *testing.T) {
	out, _, code := run(t, nil, Options{}, "spawn", "--help")
	if code != ExitOK || !strings.Contains(out, "--group G") || !strings.Contains(out, "KRAD_ADE_GROUP") {
		t.Errorf("krad spawn --help exited %d and says:\n%s\nwant --group and what it does", code, out)
	}
}

func TestAgentsName(t *testing.T) {
	tests := []struct {
		arg0     string
		args     []string
		wantOut  string // a part of stdout
		wantErr  string // all of stderr
		wantCode int
	}{
		{"/opt/krad-ade/krad-ade-agents", []string{"--help"}, "krad-ade-agents run -- CMD…", "", ExitOK},
		{`krad-ade-agents.exe`, []string{"-h"}, "the agents' companion", "", ExitOK},
		{"krad-ade-agents", []string{"run", "--help"}, "krad-ade-agents run [--title T] [--exec] [--setup] -- CMD…", "", ExitOK},
		{"krad-ade-agents", []string{"shell", "--help"}, "  krad-ade-agents shell\n", "", ExitOK},
		{"krad-ade-agents", []string{"list"}, "",
			"krad-ade-agents: error: unknown command \"list\"\nkrad-ade-agents: hint: run 'krad-ade-agents --help'\n", ExitUsage},
		{"krad-ade-agents", []string{"run"}, "",
			"krad-ade-agents: error: krad-ade-agents run needs a command after --, like: krad-ade-agents run -- claude\nkrad-ade-agents: hint: run 'krad-ade-agents run --help'\n", ExitUsage},
		{"krad-ade-agents", []string{"api"}, "",
			"krad-ade-agents: error: unknown command \"api\"\nkrad-ade-agents: hint: run 'krad-ade-agents --help'\n", ExitUsage},
		{"krad-ade-agents", []string{"--bogus"}, "",
			"krad-ade-agents: error: unknown flag: --bogus\nkrad-ade-agents: hint: run 'krad-ade-agents --help'\n", ExitUsage},
		{"/usr/local/bin/krad", []string{"--help"}, "krad talks to the agents bus", "", ExitOK},
	}
	for _, tt := range tests {
		t.Run(tt.arg0+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Run(context.Background(), append([]string{tt.arg0}, tt.args...), nil, nil, &out, &errOut, Options{})
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("got stdout\n%s\nwant it to contain %q", out.String(), tt.wantOut)
			}
			if got := errOut.String(); got != tt.wantErr {
				t.Errorf("got stderr\n%s\nwant\n%s", got, tt.wantErr)
			}
			if code != tt.wantCode {
				t.Errorf("got exit code %d, want %d", code, tt.wantCode)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		args []string
		want string
	}{
		{"krad", found(Discovered{}), []string{"version"}, "krad 0.1.0 · agents API v1\n"},
		{"static", Options{}, []string{"version"}, "krad 0.1.0 · agents API v1 · static build: finds the API through the KRAD_ADE_* variables only\n"},
		{"json", found(Discovered{}), []string{"version", "--json"}, `{"version":"0.1.0","api_version":1,"variables_only":false}` + "\n"},
		{"static json", Options{}, []string{"version", "--json"}, `{"version":"0.1.0","api_version":1,"variables_only":true}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Version = "0.1.0"
			out, errOut, code := run(t, nil, tt.opts, tt.args...)
			if out != tt.want || errOut != "" || code != ExitOK {
				t.Errorf("got %q, %q, exit code %d; want %q, no stderr, exit code 0", out, errOut, code, tt.want)
			}
		})
	}
}

// TestVersionSHA256: with --sha256 (hidden, for the install on SSH hosts), version --json says
// the SHA-256 of the very file that runs, here the test binary's, as sha256sum would.
func TestVersionSHA256(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	want := `{"version":"0.1.0","api_version":1,"variables_only":true,"sha256":"` + hex.EncodeToString(sum[:]) + `"}` + "\n"
	out, errOut, code := run(t, nil, Options{Version: "0.1.0"}, "version", "--json", "--sha256")
	if out != want || errOut != "" || code != ExitOK {
		t.Errorf("got %q, %q, exit code %d; want %q, no stderr, exit code 0", out, errOut, code, want)
	}
	if _, errOut, code := run(t, nil, Options{Version: "0.1.0"}, "version", "--sha256"); code != ExitUsage || !strings.Contains(errOut, "--sha256 goes with --json") {
		t.Errorf("--sha256 alone: got %q, exit code %d; want a usage error", errOut, code)
	}
	if out, _, _ := run(t, nil, Options{Version: "0.1.0"}, "version", "--help"); strings.Contains(out, "sha256") {
		t.Errorf("version --help shows the hidden --sha256:\n%s", out)
	}
}

// TestNoTokenInOutput runs every command, in success and in failure, and checks that the token
// appears only where --show-token asks for it.
func TestNoTokenInOutput(t *testing.T) {
	live, tok := startBus(t, 4321)
	dead := deadEndpoint(t)
	wrong := newToken(t)
	loose := filepath.Join(t.TempDir(), "loose")
	if err := os.WriteFile(loose, []byte(tok.Reveal()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	setups := []struct {
		name string
		env  map[string]string
		opts Options
	}{
		{"variables", map[string]string{varEndpoint: live, varToken: tok.Reveal(), varTerminal: "main:4"}, Options{}},
		{"api.json", map[string]string{"HOME": "/home/u"}, found(Discovered{Path: "/home/u/.config/krad-ade/api.json", Endpoint: live, Token: tok, PID: 4321})},
		{"stale api.json", map[string]string{"HOME": "/home/u"}, found(Discovered{Path: "/home/u/.config/krad-ade/api.json", Endpoint: dead, Token: tok, PID: 4321})},
		{"nothing answers", map[string]string{varEndpoint: dead, varToken: tok.Reveal()}, Options{}},
		{"wrong token", map[string]string{varEndpoint: live, varToken: wrong.Reveal()}, Options{}},
		{"loose token file", map[string]string{varEndpoint: live, varTokenFile: loose}, Options{}},
		{"malformed token", map[string]string{varEndpoint: live, varToken: tok.Reveal() + "0"}, Options{}},
	}
	commands := [][]string{
		{"api"}, {"api", "--json"}, {"api", "info"}, {"api", "info", "--json"}, {"version"}, {"--help"},
		{"api", "--bogus"}, {"api", "info", "extra"},
		{"list"}, {"list", "--all", "--json"}, {"watch"}, {"watch", "--json"}, {"check", "2", "--wait", "1s"}, {"check", "dev:2"},
		{"wait", "2", "--timeout", "1s"}, {"read", "2"}, {"send", "2", "hi"}, {"send", "2", strings.Repeat("x", 70000)},
		{"spawn", "--", "sh"}, {"close", "2"}, {"close-session"}, {"report", "idle"}, {"report", "bogus"},
	}
	secrets := []string{tok.Reveal(), wrong.Reveal()}
	check := func(t *testing.T, out, errOut string, secrets []string) {
		t.Helper()
		for _, secret := range secrets {
			if strings.Contains(out+errOut, secret) {
				t.Errorf("got output with a token:\n%s%s", out, errOut)
			}
		}
	}
	for _, s := range setups {
		for _, args := range commands {
			t.Run(s.name+"/"+strings.Join(args, " "), func(t *testing.T) {
				out, errOut, _ := run(t, s.env, s.opts, args...)
				check(t, out, errOut, secrets)
			})
		}
		t.Run(s.name+"/krad-ade-agents run", func(t *testing.T) {
			out, errOut, _ := runAs(t, agentsProg, s.env, nil, "run", "--", "sh", "-c", "exit 1")
			check(t, out, errOut, secrets)
		})
	}
	// And where the app answers, in success.
	idle := agent(2, "worker", "idle", "fix flaky test")
	app := &testApp{
		stream: []api.Answer{answer(t, "Agents", []api.Agent{idle})},
		answers: map[api.Name]api.Answer{
			api.List: answer(t, "Agents", []api.Agent{idle}), api.ListAll: answer(t, "Agents", []api.Agent{idle}),
			api.Check: answer(t, "Agent", idle), api.Wait: answer(t, "Agent", idle), api.Spawn: answer(t, "Agent", idle),
			api.Read: answer(t, "Screen", api.Screen{Terminal: 2, Text: "$ "}),
		},
	}
	env, appTok := startApp(t, app)
	succeeded := 0
	for _, args := range commands {
		out, errOut, code := run(t, env, Options{}, args...)
		check(t, out, errOut, []string{appTok.Reveal()})
		if code == ExitOK {
			succeeded++
		}
	}
	// All but watch and watch --json (the stream ends: exit code 2), check --wait (the agent does
	// not change: exit code 4) and the five usage errors.
	if succeeded != len(commands)-8 {
		t.Errorf("%d commands succeeded against the app, want every one that can", succeeded)
	}
	out, errOut, _ := runAs(t, agentsProg, env, nil, "run", "--", "sh", "-c", "exit 1")
	check(t, out, errOut, []string{appTok.Reveal()})
	for _, args := range [][]string{{"api", "info", "--show-token"}, {"api", "info", "--show-token", "--json"}} {
		out, _, code := run(t, setups[0].env, setups[0].opts, args...)
		if !strings.Contains(out, tok.Reveal()) || code != ExitOK {
			t.Errorf("%v: got\n%s\nexit code %d; want the token, exit code 0", args, out, code)
		}
	}
}

func TestPrintable(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"plain · text", 100, "plain · text"},
		{"\x1b[31mred", 100, `\x1b[31mred`},
		{"bell\a", 100, `bell\a`},
		{"new\nline", 100, `new\nline`},
		{"bad \xff byte", 100, `bad \xff byte`},
		{strings.Repeat("a", 20), 10, strings.Repeat("a", 10) + "…"},
	}
	for _, tt := range tests {
		if got := termsafe.Escape(tt.in, tt.max); got != tt.want {
			t.Errorf("termsafe.Escape(%q, %d): got %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestAbbreviate(t *testing.T) {
	tests := []struct{ path, home, want string }{
		{"/home/u/.config/krad-ade/api.json", "/home/u", "~/.config/krad-ade/api.json"},
		{"/home/u/.config/krad-ade/api.json", "/home/u/", "~/.config/krad-ade/api.json"},
		{"/home/u", "/home/u", "~"},
		{"/home/user/api.json", "/home/u", "/home/user/api.json"},
		{"/etc/api.json", "", "/etc/api.json"},
		{"/api.json", "/", "/api.json"},
	}
	for _, tt := range tests {
		if got := abbreviate(tt.path, tt.home); got != tt.want {
			t.Errorf("abbreviate(%q, %q): got %q, want %q", tt.path, tt.home, got, tt.want)
		}
	}
}
