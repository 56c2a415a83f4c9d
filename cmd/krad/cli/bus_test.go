package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
)

func TestFindBus(t *testing.T) {
	const endpoint = "127.0.0.1:52144"
	tok := newToken(t)
	other := newToken(t)
	dir := t.TempDir()
	goodFile := filepath.Join(dir, "token")
	looseFile := filepath.Join(dir, "loose")
	for path, mode := range map[string]os.FileMode{goodFile: 0o600, looseFile: 0o644} {
		if err := os.WriteFile(path, []byte(tok.Reveal()+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	fromFile := Discovered{Path: "/home/u/.config/krad-ade/api.json", Endpoint: "127.0.0.1:40000", Token: other, PID: 77}
	discoverFile := func(func(string) string) (Discovered, error) { return fromFile, nil }
	notThere := func(func(string) string) (Discovered, error) {
		return Discovered{Path: "/home/u/.config/krad-ade/api.json"}, fs.ErrNotExist
	}
	unreadable := func(func(string) string) (Discovered, error) {
		return Discovered{Path: "/home/u/.config/krad-ade/api.json"}, errors.New("not a JSON object")
	}
	noFolder := func(func(string) string) (Discovered, error) {
		return Discovered{}, errors.New("no config folder: neither XDG_CONFIG_HOME nor HOME is an absolute path")
	}
	mustNotRead := func(func(string) string) (Discovered, error) {
		t.Error("api.json was read although the variables are set")
		return fromFile, nil
	}
	main4 := api.FromTerminal(api.TerminalID{Environment: "main", Terminal: 4})

	tests := []struct {
		name     string
		env      map[string]string
		discover func(func(string) string) (Discovered, error)

		// a bus found:
		endpoint, file string
		token          api.Token
		from           api.Caller
		// or an error:
		wantErr  string // a part of the message
		wantHint string // a part of the hint
		wantCode int
	}{
		{name: "variables: endpoint and token",
			env:      map[string]string{varEndpoint: endpoint, varToken: tok.Reveal()},
			discover: mustNotRead, endpoint: endpoint, token: tok, from: api.FromClient},
		{name: "variables: the terminal is the caller",
			env:      map[string]string{varEndpoint: endpoint, varToken: tok.Reveal(), varTerminal: "main:4"},
			discover: mustNotRead, endpoint: endpoint, token: tok, from: main4},
		{name: "variables: token file",
			env:      map[string]string{varEndpoint: endpoint, varTokenFile: goodFile, varTerminal: "main:4"},
			discover: mustNotRead, endpoint: endpoint, token: tok, from: main4},
		// The file holds the current run's token; KRAD_ADE_TOKEN, the token of the run that
		// opened the terminal.
		{name: "variables: the token file before KRAD_ADE_TOKEN",
			env:      map[string]string{varEndpoint: endpoint, varToken: other.Reveal(), varTokenFile: goodFile},
			endpoint: endpoint, token: tok, from: api.FromClient},
		{name: "variables: a token file others can read is refused, even beside KRAD_ADE_TOKEN",
			env:     map[string]string{varEndpoint: endpoint, varToken: other.Reveal(), varTokenFile: looseFile},
			wantErr: "has mode 0644: it must be owner-only", wantCode: ExitUnauthorized},
		{name: "variables: a missing token file says when the app writes it",
			env:     map[string]string{varEndpoint: endpoint, varToken: other.Reveal(), varTokenFile: filepath.Join(dir, "gone")},
			wantErr: "no such file or directory", wantHint: "krad-ade writes the file when it starts", wantCode: ExitUnauthorized},
		{name: "variables: a token file others can read is refused",
			env:     map[string]string{varEndpoint: endpoint, varTokenFile: looseFile},
			wantErr: fmt.Sprintf("KRAD_ADE_TOKEN_FILE: token file %q has mode 0644: it must be owner-only (chmod 600 %q)", looseFile, looseFile), wantCode: ExitUnauthorized},
		{name: "variables: a missing token file",
			env:     map[string]string{varEndpoint: endpoint, varTokenFile: filepath.Join(dir, "missing")},
			wantErr: "no such file or directory", wantCode: ExitUnauthorized},
		{name: "variables: a malformed token",
			env:     map[string]string{varEndpoint: endpoint, varToken: "secret-but-wrong"},
			wantErr: "KRAD_ADE_TOKEN is not a token: a token is 32 lowercase hex digits", wantCode: ExitUnauthorized},
		{name: "variables: no token",
			env:     map[string]string{varEndpoint: endpoint},
			wantErr: "neither KRAD_ADE_TOKEN nor KRAD_ADE_TOKEN_FILE is", wantCode: ExitUnauthorized},
		{name: "variables: terminal without endpoint, even with api.json",
			env: map[string]string{varTerminal: "main:4", varToken: tok.Reveal()}, discover: mustNotRead,
			wantErr: "KRAD_ADE_TERMINAL is set, but KRAD_ADE_ENDPOINT is not", wantCode: ExitNoAPI},
		{name: "variables: endpoint not on loopback",
			env:     map[string]string{varEndpoint: "10.0.0.1:52144", varToken: tok.Reveal()},
			wantErr: `KRAD_ADE_ENDPOINT="10.0.0.1:52144": the endpoint is not a loopback address`, wantCode: ExitNoAPI},
		{name: "variables: endpoint not host:port, quoted and cut",
			env:     map[string]string{varEndpoint: "\x1b[31m" + strings.Repeat("x", 100), varToken: tok.Reveal()},
			wantErr: `KRAD_ADE_ENDPOINT="\x1b[31mxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…": the endpoint must be like 127.0.0.1:52144`, wantCode: ExitNoAPI},
		{name: "variables: malformed terminal",
			env:     map[string]string{varEndpoint: endpoint, varToken: tok.Reveal(), varTerminal: "main"},
			wantErr: `KRAD_ADE_TERMINAL="main": a terminal is environment:number`, wantCode: ExitFailed},
		{name: "api.json",
			env: map[string]string{}, discover: discoverFile,
			endpoint: "127.0.0.1:40000", token: other, from: api.FromClient, file: fromFile.Path},
		{name: "api.json: its token, not KRAD_ADE_TOKEN, when the endpoint is not set",
			env: map[string]string{varToken: tok.Reveal()}, discover: discoverFile,
			endpoint: "127.0.0.1:40000", token: other, from: api.FromClient, file: fromFile.Path},
		{name: "api.json missing says where krad looked",
			env: map[string]string{"HOME": "/home/u"}, discover: notThere,
			wantErr: "no agents API found: KRAD_ADE_ENDPOINT is not set, and there is no ~/.config/krad-ade/api.json", wantCode: ExitNoAPI},
		{name: "api.json unreadable",
			env: map[string]string{"HOME": "/home/u"}, discover: unreadable,
			wantErr: "read ~/.config/krad-ade/api.json: not a JSON object", wantCode: ExitNoAPI},
		{name: "no config folder",
			env: map[string]string{}, discover: noFolder,
			wantErr: "find api.json: no config folder", wantCode: ExitNoAPI},
		{name: "static build: variables only",
			env: map[string]string{varToken: tok.Reveal()}, discover: nil,
			wantErr: "KRAD_ADE_ENDPOINT is not set, and this krad finds the agents API only through the KRAD_ADE_* variables", wantCode: ExitNoAPI},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := findBus(MapEnv(tt.env), tt.discover)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("got a bus at %s, want error %q", b.client.Endpoint, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("got error %q, want it to contain %q", err, tt.wantErr)
				}
				if got := exitCode(err); got != tt.wantCode {
					t.Errorf("got exit code %d, want %d", got, tt.wantCode)
				}
				if hintOf(err) == "" || !strings.Contains(hintOf(err), tt.wantHint) {
					t.Errorf("got hint %q for %q, want one with %q", hintOf(err), err, tt.wantHint)
				}
				for _, secret := range []string{tok.Reveal(), other.Reveal(), "secret-but-wrong"} {
					if strings.Contains(err.Error(), secret) || strings.Contains(hintOf(err), secret) {
						t.Errorf("the error %q or its hint holds a token", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %q, want a bus", err)
			}
			if got := b.client.Endpoint; got != tt.endpoint {
				t.Errorf("got endpoint %q, want %q", got, tt.endpoint)
			}
			if !b.client.Token.Equal(tt.token) {
				t.Errorf("got another token than the one wanted")
			}
			if got := b.client.From; got != tt.from {
				t.Errorf("got caller %v, want %v", got, tt.from)
			}
			if got := b.file; got != tt.file {
				t.Errorf("got file %q, want %q", got, tt.file)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	answered := func(code api.ErrorCode) error {
		return &problem{err: fmt.Errorf("Hello: the app answered %w", api.Errorf(code, "m"))}
	}
	tests := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("write: broken pipe"), ExitFailed},
		{answered(api.CodeNotFound), ExitFailed},
		{answered(api.CodeConflict), ExitFailed},
		{answered(api.CodeBadRequest), ExitFailed},
		{answered(api.CodeUnavailable), ExitFailed},
		{answered(api.CodeInternal), ExitFailed},
		{&problem{err: &api.UnreachableError{Endpoint: "127.0.0.1:1", Err: errors.New("refused")}}, ExitNoAPI},
		{&problem{err: errors.New("api.json at x is stale"), kind: errNoAPI}, ExitNoAPI},
		{answered(api.CodeUnauthorized), ExitUnauthorized},
		{answered(api.CodeForbidden), ExitUnauthorized},
		{&problem{err: errors.New("no token"), kind: errNoToken}, ExitUnauthorized},
		{fmt.Errorf("Wait: %w", api.ErrTimedOut), ExitTimedOut},
		{&problem{err: errors.New("unknown flag"), kind: errUsage}, ExitUsage},
		{answered(api.CodeUnsupportedAPIVersion), ExitUnsupportedVersion},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v): got %d, want %d", tt.err, got, tt.want)
		}
	}
}
