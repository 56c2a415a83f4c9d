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
	} {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), c.args, MapEnv(c.env), nil, &stdout, &stderr, Options{})
		if code == 0 || stdout.Len() != 0 || !strings.Contains(stderr.String(), c.want) || !strings.HasPrefix(stderr.String(), "krad-ade-askpass: error: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want a failure saying %q", c.args, code, stdout.String(), stderr.String(), c.want)
		}
	}
}
