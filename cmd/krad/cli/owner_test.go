//go:build linux

package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/kradtest/listenownertest"
	"github.com/krad-ade/krad/listenowner"
)

// TestForeignListener: another user took the endpoint's port. krad, static or local, found
// through the variables (with the token or its file) or through api.json, never writes the
// token there: the squatter receives nothing, and krad exits 2 with the hint.
func TestForeignListener(t *testing.T) {
	sq := listenownertest.Start(t, "127.0.0.1:0", true)
	tok := newToken(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(tok.Reveal()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refusal := fmt.Sprintf("the listener at %s belongs to uid %d, not you (uid %d): it is not krad-ade's agents bus; the token was not sent",
		sq.Addr, listenownertest.Nobody, os.Getuid())
	viaVariables := "krad: error: " + refusal + "\nkrad: hint: " + foreignHint + "\n"
	viaFile := "krad: error: api.json at ~/.config/krad-ade/api.json is stale: " + refusal + "\nkrad: hint: " + staleHint + "\n"

	tests := []struct {
		name string
		env  map[string]string
		opts Options
		args []string
		want string
	}{
		{name: "static krad, token file, api", opts: Options{}, args: []string{"api"}, want: viaVariables,
			env: map[string]string{varEndpoint: sq.Addr, varTokenFile: tokenFile, varTerminal: "build:3"}},
		{name: "static krad, token file, list", opts: Options{}, args: []string{"list"}, want: viaVariables,
			env: map[string]string{varEndpoint: sq.Addr, varTokenFile: tokenFile, varTerminal: "build:3"}},
		{name: "static krad, token file, watch", opts: Options{}, args: []string{"watch"}, want: viaVariables,
			env: map[string]string{varEndpoint: sq.Addr, varTokenFile: tokenFile, varTerminal: "build:3"}},
		{name: "local krad, token variable, send", opts: found(Discovered{}), args: []string{"send", "2", "hello"}, want: viaVariables,
			env: map[string]string{varEndpoint: sq.Addr, varToken: tok.Reveal(), varTerminal: "main:1"}},
		{name: "local krad through api.json, api info", args: []string{"api", "info"}, want: viaFile,
			env:  map[string]string{"HOME": "/home/u"},
			opts: found(Discovered{Path: "/home/u/.config/krad-ade/api.json", Endpoint: sq.Addr, Token: tok, PID: 4321})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := run(t, tt.env, tt.opts, tt.args...)
			if code != ExitNoAPI {
				t.Errorf("got exit code %d, want %d (no live API)", code, ExitNoAPI)
			}
			if stdout != "" {
				t.Errorf("got stdout %q, want nothing", stdout)
			}
			if stderr != tt.want {
				t.Errorf("got stderr\n%s\nwant\n%s", stderr, tt.want)
			}
			got := sq.Received(t, 5*time.Second)
			if len(got) != 0 {
				t.Errorf("the squatter received %q, want nothing", got)
			}
			if strings.Contains(string(got)+stderr, tok.Reveal()) {
				t.Error("the token leaked")
			}
		})
	}
}

// TestVerifyCannotTell: when krad cannot tell who listens, it does not send the token either.
func TestVerifyCannotTell(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	bus := &bus{client: api.Client{Endpoint: "127.0.0.1:41877"}}
	err := bus.verify(a)
	want := "cannot tell whose listener is at 127.0.0.1:41877, so the token was not sent: not a TCP connection to a loopback address"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	if got := exitCode(err); got != ExitNoAPI {
		t.Errorf("got exit code %d, want %d", got, ExitNoAPI)
	}
	if !errors.Is(err, listenowner.ErrNotLoopback) || hintOf(err) == "" {
		t.Errorf("got %v with hint %q, want it to wrap ErrNotLoopback and have a hint", err, hintOf(err))
	}
}
