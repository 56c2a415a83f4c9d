package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/discovery"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// TestAPI runs `krad api` and `krad api info` against a real bus, a stale api.json and peers that
// are not the bus, and checks the exact output and exit code.
func TestAPI(t *testing.T) {
	live, tok := startBus(t, 4321)
	nopid, nopidTok := startBus(t, 0)
	dead := deadEndpoint(t)
	unsupported := startPeer(t, `{"Error":{"code":"unsupported_api_version","message":"This app serves the agents API v2, not v1"}}`+"\n")
	http := startPeer(t, "HTTP/1.1 400 Bad Request\r\n\r\n")
	wrong := newToken(t)

	const home = "/home/u"
	const file = "/home/u/.config/krad-ade/api.json"
	viaFile := func(endpoint string, pid int) Options {
		d := Discovered{Path: file, Endpoint: endpoint, Token: tok, PID: pid}
		return found(d)
	}
	vars := func(endpoint string) map[string]string {
		return map[string]string{varEndpoint: endpoint, varToken: tok.Reveal(), "HOME": home}
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(wrong.Reveal()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		env        map[string]string
		opts       Options
		args       []string
		wantOut    string
		wantErr    string
		wantCode   int
		wantPrefix bool // wantErr is the start of stderr, not all of it
	}{
		{name: "api through the variables", env: vars(live), args: []string{"api"},
			wantOut: "agents API v1 · build test · pid 4321 · LIVE (found through KRAD_ADE_ENDPOINT)\n"},
		{name: "api through api.json", env: map[string]string{"HOME": home}, opts: viaFile(live, 4321), args: []string{"api"},
			wantOut: "agents API v1 · build test · pid 4321 · LIVE (found through ~/.config/krad-ade/api.json)\n"},
		{name: "api without a pid in the answer", env: map[string]string{varEndpoint: nopid, varToken: nopidTok.Reveal()}, args: []string{"api"},
			wantOut: "agents API v1 · build test · NOPID (found through KRAD_ADE_ENDPOINT)\n"},
		{name: "api --json", env: vars(live), args: []string{"api", "--json"},
			wantOut: `{"api_version":1,"build":"test","pid":4321,"endpoint":"LIVE"}` + "\n"},
		{name: "api --json without a pid", env: map[string]string{varEndpoint: nopid, varToken: nopidTok.Reveal()}, args: []string{"api", "--json"},
			wantOut: `{"api_version":1,"build":"test","endpoint":"NOPID"}` + "\n"},

		{name: "api info through api.json", env: map[string]string{"HOME": home}, opts: viaFile(live, 4321), args: []string{"api", "info"},
			wantOut: "" +
				"endpoint       LIVE\n" +
				"api version    1\n" +
				"build          test\n" +
				"found through  ~/.config/krad-ade/api.json\n" +
				"caller         Client\n"},
		{name: "api info through the variables, as a terminal, with the token",
			env: map[string]string{varEndpoint: live, varToken: tok.Reveal(), varTerminal: "main:4"}, args: []string{"api", "info", "--show-token"},
			wantOut: "" +
				"endpoint       LIVE\n" +
				"api version    1\n" +
				"build          test\n" +
				"found through  KRAD_ADE_ENDPOINT\n" +
				"caller         Terminal main:4\n" +
				"token          TOKEN\n"},
		{name: "api info --json through api.json", env: map[string]string{"HOME": home}, opts: viaFile(live, 4321), args: []string{"api", "info", "--json"},
			wantOut: `{"endpoint":"LIVE","api_version":1,"build":"test","discovery_file":"/home/u/.config/krad-ade/api.json"}` + "\n"},
		{name: "api info --json --show-token through api.json", env: map[string]string{"HOME": home}, opts: viaFile(live, 4321), args: []string{"api", "info", "--json", "--show-token"},
			wantOut: `{"endpoint":"LIVE","api_version":1,"build":"test","discovery_file":"/home/u/.config/krad-ade/api.json","token":"TOKEN"}` + "\n"},
		{name: "api info --json through the variables", env: vars(live), args: []string{"api", "info", "--json"},
			wantOut: `{"endpoint":"LIVE","api_version":1,"build":"test"}` + "\n"},

		{name: "api info: stale api.json, nothing answers", env: map[string]string{"HOME": home}, opts: viaFile(dead, 4321), args: []string{"api", "info"},
			wantErr: "krad: error: api.json at ~/.config/krad-ade/api.json is stale: nothing answers at DEAD\n" +
				"krad: hint: start krad-ade; the next start replaces the file\n",
			wantCode: ExitNoAPI},
		{name: "api info: stale api.json, another process answers", env: map[string]string{"HOME": home}, opts: viaFile(live, 999), args: []string{"api", "info", "--json"},
			wantErr: "krad: error: api.json at ~/.config/krad-ade/api.json is stale: another process (pid 4321) answers at LIVE\n" +
				"krad: hint: start krad-ade; the next start replaces the file\n",
			wantCode: ExitNoAPI},
		{name: "api: stale api.json, another program holds the port", env: map[string]string{"HOME": home}, opts: viaFile(http, 4321), args: []string{"api"},
			wantErr: "krad: error: api.json at ~/.config/krad-ade/api.json is stale: something that is not the agents bus answers at HTTP\n" +
				"krad: hint: start krad-ade; the next start replaces the file\n",
			wantCode: ExitNoAPI},
		{name: "api: nothing answers at KRAD_ADE_ENDPOINT", env: vars(dead), args: []string{"api"},
			wantErr:  "krad: error: no agents bus answers at DEAD: ",
			wantCode: ExitNoAPI, wantPrefix: true},

		{name: "api: wrong KRAD_ADE_TOKEN", env: map[string]string{varEndpoint: live, varToken: wrong.Reveal()}, args: []string{"api"},
			wantErr:  "krad: error: Hello: the app answered unauthorized: ",
			wantCode: ExitUnauthorized, wantPrefix: true},
		{name: "api info: wrong token in KRAD_ADE_TOKEN_FILE", env: map[string]string{varEndpoint: live, varTokenFile: tokenFile}, args: []string{"api", "info"},
			wantErr:  "krad: error: Hello: the app answered unauthorized: ",
			wantCode: ExitUnauthorized, wantPrefix: true},

		{name: "api: unsupported API version", env: vars(unsupported), args: []string{"api"},
			wantErr: "krad: error: Hello: the app answered unsupported_api_version: This app serves the agents API v2, not v1\n" +
				"krad: hint: this krad speaks the agents API v1: use the krad that came with this krad-ade (first on PATH in its terminals)\n",
			wantCode: ExitUnsupportedVersion},
		{name: "api info: unsupported API version", env: map[string]string{"HOME": home}, opts: viaFile(unsupported, 4321), args: []string{"api", "info", "--json"},
			wantErr:  "krad: error: Hello: the app answered unsupported_api_version: ",
			wantCode: ExitUnsupportedVersion, wantPrefix: true},

		{name: "api: bad flag", env: vars(live), args: []string{"api", "--bogus"},
			wantErr:  "krad: error: unknown flag: --bogus\nkrad: hint: run 'krad api --help'\n",
			wantCode: ExitUsage},
		{name: "api: unknown sub-command", env: vars(live), args: []string{"api", "infos"},
			wantErr:  "krad: error: unknown command \"infos\"\nkrad: hint: run 'krad api --help'\n",
			wantCode: ExitUsage},
		{name: "api info: an argument", env: vars(live), args: []string{"api", "info", "now"},
			wantErr:  "krad: error: krad api info takes no arguments, and \"now\" is not one of its commands\nkrad: hint: run 'krad api info --help'\n",
			wantCode: ExitUsage},
		{name: "api info: a flag of another command", env: vars(live), args: []string{"api", "info", "--tail"},
			wantErr:  "krad: error: unknown flag: --tail\nkrad: hint: run 'krad api info --help'\n",
			wantCode: ExitUsage},
	}
	fill := strings.NewReplacer("LIVE", live, "NOPID", nopid, "DEAD", dead, "HTTP", http, "TOKEN", tok.Reveal())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, tt.env, tt.opts, tt.args...)
			if want := fill.Replace(tt.wantOut); out != want {
				t.Errorf("got stdout\n%s\nwant\n%s", out, want)
			}
			want := fill.Replace(tt.wantErr)
			if tt.wantPrefix && !strings.HasPrefix(errOut, want) || !tt.wantPrefix && errOut != want {
				t.Errorf("got stderr\n%s\nwant\n%s", errOut, want)
			}
			if tt.wantPrefix && !strings.Contains(errOut, "\nkrad: hint: ") {
				t.Errorf("got stderr\n%s\nwant a hint", errOut)
			}
			if code != tt.wantCode {
				t.Errorf("got exit code %d, want %d", code, tt.wantCode)
			}
		})
	}
}

// TestHints checks the next step krad gives for the failures people meet most.
func TestHints(t *testing.T) {
	live, _ := startBus(t, 4321)
	dead := deadEndpoint(t)
	wrong := newToken(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(wrong.Reveal()), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		env      map[string]string
		opts     Options
		wantHint string
	}{
		{"unauthorized, KRAD_ADE_TOKEN", map[string]string{varEndpoint: live, varToken: wrong.Reveal()}, Options{},
			"KRAD_ADE_TOKEN is from an earlier run of krad-ade: restart the terminal to get the current one"},
		{"unauthorized, KRAD_ADE_TOKEN_FILE", map[string]string{varEndpoint: live, varTokenFile: tokenFile}, Options{},
			"the token in KRAD_ADE_TOKEN_FILE is from an earlier run of krad-ade"},
		{"unauthorized, api.json", map[string]string{"HOME": "/home/u"},
			found(Discovered{Path: "/home/u/.config/krad-ade/api.json", Endpoint: live, Token: wrong, PID: 4321}),
			"the app that answers does not know the token in ~/.config/krad-ade/api.json"},
		{"unreachable, KRAD_ADE_ENDPOINT", map[string]string{varEndpoint: dead, varToken: wrong.Reveal()}, Options{},
			"start krad-ade, or set KRAD_ADE_ENDPOINT"},
		{"no api.json", map[string]string{"HOME": "/home/u"}, Options{}, // the static build
			"run krad in one of krad-ade's terminals"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, _ := run(t, tt.env, tt.opts, "api")
			if !strings.Contains(errOut, "krad: hint: "+tt.wantHint) {
				t.Errorf("got stderr\n%s\nwant the hint %q", errOut, tt.wantHint)
			}
		})
	}
}

// TestSilentPeer: a program on api.json's port that reads the line and says nothing (an HTTP
// server waits for the rest of a request) is not the bus, and the file is stale.
func TestSilentPeer(t *testing.T) {
	t.Parallel()
	addr := silentPeer(t)
	start := time.Now()
	d := Discovered{Path: "/home/u/.config/krad-ade/api.json", Endpoint: addr, Token: newToken(t), PID: 4321}
	_, errOut, code := run(t, map[string]string{"HOME": "/home/u"}, found(d), "api", "info")
	want := "krad: error: api.json at ~/.config/krad-ade/api.json is stale: something that is not the agents bus answers at " + addr + "\n"
	if !strings.HasPrefix(errOut, want) || code != ExitNoAPI {
		t.Errorf("got stderr\n%s\nexit code %d; want\n%s\nexit code %d", errOut, code, want, ExitNoAPI)
	}
	if took := time.Since(start); took > helloWait+2*time.Second {
		t.Errorf("took %s, want about %s", took, helloWait)
	}
}

// TestAnswerTooLong: an app whose answer is longer than krad reads (an SSH host sent huge window
// names, say) is a live app with an answer too long, not a stale api.json: krad list, krad watch
// and krad read say so, with a next step, and exit 1, not 2. It runs the real krad (built without
// the race detector, as people run it): under the race detector the client's read of 32 MiB took
// 4 s on a quiet machine and past krad's 12 s on a loaded one, which is the detector's cost, not
// krad's (0.4 s without it).
func TestAnswerTooLong(t *testing.T) {
	krad := filepath.Join(testbin.Dir(t), "krad")
	title := strings.Repeat(`\u0001`, api.MaxAnswerLine/6+1) // just over 32 MiB of JSON, as a dozen such windows made
	huge := startPeer(t, `{"Agents":[{"environment":"build","terminal":1,"title":"`+title+`","role":"shell","state":"idle"}]}`+"\n")
	screen := startPeer(t, `{"Screen":{"terminal":2,"text":"`+title+`"}}`+"\n")
	tok := newToken(t)
	home := t.TempDir()
	apiJSON := discovery.File{APIVersion: 1, Endpoint: huge, Token: tok, PID: os.Getpid(), StartedAt: time.Now()}
	if err := discovery.Write(filepath.Join(home, ".config", "krad-ade"), apiJSON); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		env  []string
		want string
		hint string
	}{
		{[]string{"list"}, nil, "List: the app at " + huge + " answered, but the answer is longer than 32 MiB, the most a client reads", "krad-ade's log warns about such a host"},
		{[]string{"watch"}, nil, "SubscribeAgents: the app at " + huge + " answered, but the answer is longer than 32 MiB", "krad-ade's log warns about such a host"},
		{[]string{"read", "2"}, []string{varEndpoint + "=" + screen, varToken + "=" + tok.Reveal(), varTerminal + "=build:1"}, "Read: the app at " + screen + " answered, but the answer is longer than 32 MiB", "krad read T --lines N"},
	} {
		cmd := exec.Command(krad, tt.args...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + home}, tt.env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		code := 0
		if err := cmd.Run(); err != nil {
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatal(err)
			}
			code = exit.ExitCode()
		}
		errOut := stderr.String()
		if !strings.HasPrefix(errOut, "krad: error: "+tt.want) || !strings.Contains(errOut, "\nkrad: hint: ") || !strings.Contains(errOut, tt.hint) || code != ExitFailed {
			t.Errorf("krad %s: got stderr\n%s\nexit code %d; want\nkrad: error: %s…\nwith a hint naming %q, exit code %d", strings.Join(tt.args, " "), errOut, code, tt.want, tt.hint, ExitFailed)
		}
		if strings.Contains(errOut, "stale") {
			t.Errorf("krad %s calls a live app's api.json stale:\n%s", strings.Join(tt.args, " "), errOut)
		}
	}
}
