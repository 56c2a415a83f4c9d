package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
)

func TestPromptKind(t *testing.T) {
	for prompt, want := range map[string]string{
		"Username for 'https://github.com': ":       api.AskUsername,
		"Password for 'https://me@github.com': ":    api.AskPassword,
		"Enter passphrase for key '/h/.ssh/id': ":   api.AskPassphrase,
		"me@host's password: ":                      api.AskPassword,
		"Are you sure you want to continue (yes)? ": "",
	} {
		if got := promptKind(prompt); got != want {
			t.Errorf("promptKind(%q) = %q, want %q", prompt, got, want)
		}
	}
}

// TestAskpassOutsideTheApp: krad-ade-askpass, called by that name, takes one prompt, and outside
// the app's terminals fails with what to do, printing nothing on stdout for git to take.
func TestAskpassOutsideTheApp(t *testing.T) {
	tok, _ := api.NewToken()
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"/opt/krad/krad-ade-askpass"}, nil, "takes one argument"},
		{[]string{"krad-ade-askpass", "Password: "}, nil, "KRAD_ADE_ENDPOINT is not set"},
		{[]string{"krad-ade-askpass", "Password: "}, map[string]string{varEndpoint: "127.0.0.1:1", varToken: tok.Reveal()}, "KRAD_ADE_TERMINAL is not set"},
		{[]string{"krad-ade-askpass", "Password: "}, map[string]string{varEndpoint: "127.0.0.1:1", varToken: tok.Reveal(), api.VarGit: "no such\x1b"}, "KRAD_ADE_GIT="},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), c.args, MapEnv(c.env), nil, &stdout, &stderr, Options{})
		if code == 0 || stdout.Len() != 0 || !strings.Contains(stderr.String(), c.want) || !strings.HasPrefix(stderr.String(), "krad-ade-askpass: error: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want a failure saying %q", c.args, code, stdout.String(), stderr.String(), c.want)
		}
	}
}

// TestAppGitEnv: krad-ade-agents worktree gives its gits the askpass variables only when the app
// said they are its own (KRAD_ADE_GIT and GIT_ASKPASS), and then all of them, an unset one empty
// so that none is taken from elsewhere.
func TestAppGitEnv(t *testing.T) {
	key, _ := api.NewToken()
	if got := appGitEnv(MapEnv(map[string]string{"GIT_ASKPASS": "/opt/mine"}), key.Reveal()); got != nil {
		t.Errorf("without KRAD_ADE_GIT: %q, want nothing", got)
	}
	if got := appGitEnv(MapEnv(map[string]string{api.VarGit: "build"}), key.Reveal()); got != nil {
		t.Errorf("without GIT_ASKPASS: %q, want nothing", got)
	}
	got := appGitEnv(MapEnv(map[string]string{api.VarGit: "build", "GIT_ASKPASS": "/b/krad-ade-askpass", varEndpoint: "127.0.0.1:4", varTokenFile: "/t",
		api.VarAskpassKey: "not this one"}), key.Reveal())
	// The key is the operation's, from stdin: never one from the verb's own environment (its
	// command line on the host, which every user there can read).
	want := []string{"GIT_ASKPASS=/b/krad-ade-askpass", "KRAD_ADE_ENDPOINT=127.0.0.1:4", "KRAD_ADE_TOKEN=", "KRAD_ADE_TOKEN_FILE=/t", "KRAD_ADE_TERMINAL=", "KRAD_ADE_GIT=build", "KRAD_ADE_ASKPASS_KEY=" + key.Reveal()}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("appGitEnv = %q, want %q", got, want)
	}
}

// TestParseProcStat: the name is what is between the first '(' and the last ')', which may hold
// spaces and parentheses; the parent the fourth field.
func TestParseProcStat(t *testing.T) {
	for _, c := range []struct {
		in   string
		comm string
		ppid int
		ok   bool
	}{
		{"1234 (git-remote-http) S 99 1234 1234 0 -1", "git-remote-http", 99, true},
		{"7 (a) b) (c) R 3 7", "a) b) (c", 3, true},
		{"7 (sh) S", "", 0, false},
		{"7 sh S 3", "", 0, false},
		{"7 (sh) S -1 2", "", 0, false},
		{"", "", 0, false},
	} {
		comm, ppid, ok := parseProcStat(c.in)
		if comm != c.comm || ppid != c.ppid || ok != c.ok {
			t.Errorf("parseProcStat(%q) = %q, %d, %v; want %q, %d, %v", c.in, comm, ppid, ok, c.comm, c.ppid, c.ok)
		}
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add("1234 (git-remote-http) S 99 1234")
	f.Add("7 (a) b) (c) R 3 7")
	f.Fuzz(func(t *testing.T, s string) {
		comm, ppid, ok := parseProcStat(s)
		if ok && (ppid < 1 || !strings.Contains(s, "("+comm+")")) {
			t.Errorf("parseProcStat(%q) = %q, %d", s, comm, ppid)
		}
	})
}
