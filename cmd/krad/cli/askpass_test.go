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
	if got := appGitEnv(MapEnv(map[string]string{"GIT_ASKPASS": "/opt/mine"})); got != nil {
		t.Errorf("without KRAD_ADE_GIT: %q, want nothing", got)
	}
	if got := appGitEnv(MapEnv(map[string]string{api.VarGit: "build"})); got != nil {
		t.Errorf("without GIT_ASKPASS: %q, want nothing", got)
	}
	got := appGitEnv(MapEnv(map[string]string{api.VarGit: "build", "GIT_ASKPASS": "/b/krad-ade-askpass", varEndpoint: "127.0.0.1:4", varTokenFile: "/t"}))
	want := []string{"GIT_ASKPASS=/b/krad-ade-askpass", "KRAD_ADE_ENDPOINT=127.0.0.1:4", "KRAD_ADE_TOKEN=", "KRAD_ADE_TOKEN_FILE=/t", "KRAD_ADE_TERMINAL=", "KRAD_ADE_GIT=build"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("appGitEnv = %q, want %q", got, want)
	}
}
