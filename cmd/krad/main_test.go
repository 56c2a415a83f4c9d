package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/cmd/krad/cli"
	"github.com/krad-ade/krad/cmd/krad/desktop"
	"github.com/krad-ade/krad/discovery"
	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/local"
)

// TestAPIJSON finds a real bus through a real api.json, as krad does outside the app's terminals.
func TestAPIJSON(t *testing.T) {
	served := apptest.Serve(t, local.Config{PID: 4321})
	srv, tok := served.Bus, served.Token

	home := t.TempDir()
	write := func(config string, pid int) {
		t.Helper()
		f := discovery.File{APIVersion: 1, Endpoint: srv.Addr(), Token: tok, PID: pid, StartedAt: time.Now()}
		if err := discovery.Write(filepath.Join(home, config, "krad-ade"), f); err != nil {
			t.Fatal(err)
		}
	}
	write("live", 4321)
	write("stale", 999)
	if err := os.MkdirAll(filepath.Join(home, "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	write("loose", 4321)
	if err := os.Chmod(filepath.Join(home, "loose", "krad-ade", "api.json"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		config   string
		args     []string
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{"live", []string{"api"}, "agents API v1 · build test · pid 4321 · ADDR (found through ~/live/krad-ade/api.json)\n", "", cli.ExitOK},
		{"live", []string{"api", "info", "--json"}, `{"endpoint":"ADDR","api_version":1,"build":"test","discovery_file":"HOME/live/krad-ade/api.json"}` + "\n", "", cli.ExitOK},
		{"stale", []string{"api", "info"}, "",
			"krad: error: api.json at ~/stale/krad-ade/api.json is stale: another process (pid 4321) answers at ADDR\n" +
				"krad: hint: start krad-ade; the next start replaces the file\n", cli.ExitNoAPI},
		{"empty", []string{"api"}, "",
			"krad: error: no agents API found: KRAD_ADE_ENDPOINT is not set, and there is no ~/empty/krad-ade/api.json\n" +
				"krad: hint: start krad-ade (it writes api.json unless the config.toml beside it says discovery = false), or set KRAD_ADE_ENDPOINT\n", cli.ExitNoAPI},
		{"loose", []string{"api"}, "",
			"krad: error: read ~/loose/krad-ade/api.json: other users may read or change it (mode 0644, want 0600)\n" +
				"krad: hint: start krad-ade; the next start replaces the file\n", cli.ExitNoAPI},
	}
	fill := strings.NewReplacer("ADDR", srv.Addr(), "HOME", home)
	for _, tt := range tests {
		t.Run(tt.config+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			env := cli.MapEnv(map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, tt.config)})
			var out, errOut bytes.Buffer
			code := cli.Run(context.Background(), append([]string{"krad"}, tt.args...), env, nil, &out, &errOut, cli.Options{Discover: desktop.Discover})
			if want := fill.Replace(tt.wantOut); out.String() != want {
				t.Errorf("got stdout\n%s\nwant\n%s", out.String(), want)
			}
			if want := fill.Replace(tt.wantErr); errOut.String() != want {
				t.Errorf("got stderr\n%s\nwant\n%s", errOut.String(), want)
			}
			if code != tt.wantCode {
				t.Errorf("got exit code %d, want %d", code, tt.wantCode)
			}
			if strings.Contains(out.String()+errOut.String(), tok.Reveal()) {
				t.Error("the output holds the token")
			}
		})
	}
}

// TestNames builds the executable and runs it by both its names.
func TestNames(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the executable")
	}
	dir := t.TempDir()
	krad := filepath.Join(dir, "krad")
	if out, err := exec.Command("go", "build", "-o", krad, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	agents := filepath.Join(dir, "krad-ade-agents")
	if err := os.Symlink("krad", agents); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path     string
		args     []string
		wantOut  string
		wantCode int
	}{
		{krad, []string{"--help"}, "krad talks to the agents bus", 0},
		{agents, []string{"--help"}, "krad-ade-agents is the agents' companion", 0},
		{agents, []string{"list"}, "", cli.ExitUsage},
	}
	for _, tt := range tests {
		cmd := exec.Command(tt.path, tt.args...)
		cmd.Env = []string{"HOME=" + dir}
		out, _ := cmd.Output()
		if code := cmd.ProcessState.ExitCode(); code != tt.wantCode || !strings.Contains(string(out), tt.wantOut) {
			t.Errorf("%s %v: got exit code %d, stdout\n%s\nwant exit code %d, stdout with %q",
				filepath.Base(tt.path), tt.args, code, out, tt.wantCode, tt.wantOut)
		}
	}
}
