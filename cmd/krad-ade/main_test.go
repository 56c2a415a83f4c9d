package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/floodtest"
	"github.com/krad-ade/krad/kradtest/tcptest"
	"github.com/krad-ade/krad/kradtest/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// app is a krad-ade process started by a test, with its own config folder.
type app struct {
	*apptest.App
	t    *testing.T
	home string // XDG_CONFIG_HOME
	dir  string // home/krad-ade
	tok  string // the token, once read from api.json: the log must never contain it
}

// baseEnv is a minimal environment: PATH with the programs' folder first, the config home, and
// a tmux socket folder of the test's own, so that the app's tmux server is the test's.
func baseEnv(bin, home string) []string {
	return []string{
		"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + home,
		"TMUX_TMPDIR=" + home,
		"SHELL=/bin/sh",
	}
}

// killTmux stops the tmux server an app started under home.
func killTmux(home string) {
	cmd := exec.Command("tmux", "-L", "krad-ade", "kill-server")
	cmd.Env = []string{"TMUX_TMPDIR=" + home, "PATH=/usr/bin:/bin"}
	_ = cmd.Run()
}

// killUntilGone kills a tmux server, and again until none has answered for a moment (or 5 s have
// passed): a server that a client over SSH was starting as the app stopped comes up after the
// first kill, and would outlive the test.
func killUntilGone(tmux func(args ...string) *exec.Cmd) {
	for gone, deadline := 0, time.Now().Add(5*time.Second); gone < 3 && time.Now().Before(deadline); {
		if tmux("kill-server").Run() != nil {
			gone++
		} else {
			gone = 0
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func startApp(t *testing.T, home string, args ...string) *app {
	t.Helper()
	return startAppIn(t, home, "", args...)
}

// startAppIn starts the app in the folder dir ("" the test's), its local environment's folder.
func startAppIn(t *testing.T, home, dir string, args ...string) *app {
	t.Helper()
	bin := testbin.Dir(t)
	if home == "" {
		home = t.TempDir()
	}
	a := &app{t: t, home: home, dir: filepath.Join(home, "krad-ade")}
	t.Cleanup(func() { killTmux(home) }) // after the app stopped: cleanups run last first
	a.App = apptest.Start(t, apptest.Options{
		Program: filepath.Join(bin, "krad-ade"),
		Env:     baseEnv(bin, home),
		Args:    args,
		Dir:     dir,
		Secrets: func() []string { return []string{a.tok} },
	})
	return a
}

func (a *app) apiPath() string { return filepath.Join(a.dir, "api.json") }

// file reads api.json as raw JSON fields.
func (a *app) file() map[string]any {
	a.t.Helper()
	b, err := os.ReadFile(a.apiPath())
	if err != nil {
		a.t.Fatalf("read api.json: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		a.t.Fatalf("api.json is not JSON: %v", err)
	}
	if tok, ok := m["token"].(string); ok {
		a.tok = tok
	}
	return m
}

func (a *app) token() string { return a.file()["token"].(string) }

func (a *app) stop(sig syscall.Signal) int {
	a.t.Helper()
	code, _ := a.Stop(sig, 10*time.Second)
	return code
}

// nc sends one line with nc, the spec's by-hand way, and returns what came back.
func nc(t *testing.T, endpoint, line string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(endpoint)
	cmd := exec.Command("nc", host, port)
	cmd.Stdin = strings.NewReader(line)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nc: %v", err)
	}
	return string(out)
}

func needNC(t *testing.T) {
	t.Helper()
	testbin.Need(t, "nc", "netcat-openbsd")
}

func TestStartsOnTheEmbeddedDefault(t *testing.T) {
	needNC(t)
	a := startApp(t, "")
	if want := "api.json at " + a.apiPath(); !strings.HasSuffix(a.First, want) {
		t.Errorf("first line %q does not say %q", a.First, want)
	}

	// api.json: owner-only, in an owner-only folder, with exactly the spec's five fields.
	fi, err := os.Stat(a.apiPath())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("api.json has mode %o, want 600", fi.Mode().Perm())
	}
	di, _ := os.Stat(a.dir)
	if di.Mode().Perm() != 0o700 {
		t.Errorf("the config folder has mode %o, want 700", di.Mode().Perm())
	}
	raw, _ := os.ReadFile(a.apiPath())
	keys := regexp.MustCompile(`"([a-z_]+)"\s*:`).FindAllStringSubmatch(string(raw), -1)
	var names []string
	for _, k := range keys {
		names = append(names, k[1])
	}
	if got, want := strings.Join(names, ","), "api_version,endpoint,token,pid,started_at"; got != want {
		t.Errorf("api.json has keys %s, want %s", got, want)
	}
	f := a.file()
	pid := a.Cmd.Process.Pid
	if f["endpoint"] != a.Bus || f["api_version"] != 1.0 || f["pid"] != float64(pid) {
		t.Errorf("api.json = %v, want endpoint %s, version 1, pid %d", f, a.Bus, pid)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(a.token()) {
		t.Error("the token in api.json is not 32 lowercase hex digits")
	}
	if _, err := time.Parse(time.RFC3339, f["started_at"].(string)); err != nil {
		t.Errorf("started_at: %v", err)
	}

	// The spec's by-hand request, with nc.
	got := nc(t, a.Bus, fmt.Sprintf(`{"api_version":1,"token":"%s","from":"Client","request":"Hello"}`+"\n", a.token()))
	if want := fmt.Sprintf(`{"Hello":{"api_version":1,"build":"0.1.0","pid":%d}}`+"\n", pid); got != want {
		t.Errorf("nc Hello got %q, want %q", got, want)
	}
}

func TestCLIFindsTheAppThroughAPIJSON(t *testing.T) {
	a := startApp(t, "")
	bin := testbin.Dir(t)
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(filepath.Join(bin, "krad"), args...)
		cmd.Env = baseEnv(bin, a.home)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}
	pid := a.Cmd.Process.Pid
	out, errOut, code := run("api")
	want := fmt.Sprintf("agents API v1 · build 0.1.0 · pid %d · %s (found through ~/krad-ade/api.json)\n", pid, a.Bus)
	if code != 0 || out != want {
		t.Errorf("krad api: exit %d, got %q, want %q; stderr %q", code, out, want, errOut)
	}
	out, errOut, code = run("api", "info", "--json")
	want = fmt.Sprintf(`{"endpoint":%q,"api_version":1,"build":"0.1.0","discovery_file":%q}`+"\n", a.Bus, a.apiPath())
	if code != 0 || out != want {
		t.Errorf("krad api info --json: exit %d, got %q, want %q; stderr %q", code, out, want, errOut)
	}
	out, _, code = run("api", "info", "--json", "--show-token")
	if code != 0 || !strings.Contains(out, `"token":"`+a.token()+`"`) {
		t.Errorf("krad api info --json --show-token: exit %d, got %q, want the token", code, out)
	}

	// Once the app is gone the file it left behind (here: put back by hand, as a crash leaves it)
	// is stale: exit 2.
	raw, _ := os.ReadFile(a.apiPath())
	if code := a.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("krad-ade exited %d after SIGTERM, want 0", code)
	}
	if err := os.WriteFile(a.apiPath(), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run("api", "info")
	if code != 2 || !strings.Contains(errOut, "stale") {
		t.Errorf("krad api info on a stale file: exit %d, stdout %q, stderr %q; want exit 2 and 'stale'", code, out, errOut)
	}
}

func TestNoCompanionServesNothing(t *testing.T) {
	bin := testbin.Dir(t)
	lonely := t.TempDir()
	raw, err := os.ReadFile(filepath.Join(bin, "krad-ade"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lonely, "krad-ade"), raw, 0o755); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()

	// krad-ade-agents neither beside it nor on PATH: one error and its hint, exit 1, no api.json.
	cmd := exec.Command(filepath.Join(lonely, "krad-ade"))
	cmd.Env = []string{"PATH=" + t.TempDir(), "HOME=" + home, "XDG_CONFIG_HOME=" + home}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 1 || stdout.Len() != 0 ||
		!strings.HasPrefix(stderr.String(), "krad-ade: error: krad-ade-agents not found next to ") ||
		!strings.Contains(stderr.String(), "krad-ade: hint: ") {
		t.Errorf("without its companion: exit %d, stdout %q, stderr %q; want exit 1 and the error and hint", code, stdout.String(), stderr.String())
	}
	if exists(filepath.Join(home, "krad-ade", "api.json")) {
		t.Error("api.json written without the companion")
	}

	// krad-ade-agents only on PATH: the app starts, and says where its bus is.
	t.Cleanup(func() { killTmux(home) }) // after the app stopped: cleanups run last first
	apptest.Start(t, apptest.Options{Program: filepath.Join(lonely, "krad-ade"), Env: baseEnv(bin, home)})
}

func TestCleanExitRemovesItsOwnFileOnly(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			a := startApp(t, "")
			a.file()
			if code := a.stop(sig); code != 0 {
				t.Errorf("exit %d after %v, want 0", code, sig)
			}
			if _, err := os.Stat(a.apiPath()); !os.IsNotExist(err) {
				t.Errorf("api.json still there after %v (%v)", sig, err)
			}
		})
	}
	t.Run("another process's file stays", func(t *testing.T) {
		a := startApp(t, "")
		f := a.file()
		// Put back by hand, as a process that is not this app would leave it.
		f["pid"] = 1
		raw, _ := json.Marshal(f)
		if err := os.WriteFile(a.apiPath(), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		a.stop(syscall.SIGTERM)
		if got := a.file()["pid"]; got != 1.0 {
			t.Errorf("after the app stopped, api.json names pid %v, want the 1 it was given", got)
		}
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestDiscoverySetting(t *testing.T) {
	needNC(t)
	a := startApp(t, "")
	token := a.token()
	hello := func() string {
		return nc(t, a.Bus, fmt.Sprintf(`{"api_version":1,"token":"%s","from":"Client","request":"Hello"}`+"\n", token))
	}
	cfg := filepath.Join(a.dir, "config.toml")

	// Off: the file goes at once; the bus keeps serving its terminals.
	if err := os.WriteFile(cfg, []byte("discovery = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "api.json removed after discovery = false", func() bool { return !exists(a.apiPath()) })

	// On again: the same file comes back.
	_ = os.WriteFile(cfg, []byte("discovery = true\n"), 0o600)
	waitFor(t, "api.json written after discovery = true", func() bool { return exists(a.apiPath()) })
	if a.token() != token || a.file()["endpoint"] != a.Bus {
		t.Error("api.json came back with another token or endpoint")
	}
	if !strings.HasPrefix(hello(), `{"Hello":`) {
		t.Error("the bus stopped answering")
	}

	// A broken file is reported with its line and changes nothing.
	_ = os.WriteFile(cfg, []byte("# settings\ndiscovery = nope\n"), 0o600)
	waitFor(t, "the broken line reported in the log", func() bool { return strings.Contains(a.Log.String(), "line 2") })
	if !exists(a.apiPath()) {
		t.Error("a broken config.toml removed api.json")
	}
	if !strings.HasPrefix(hello(), `{"Hello":`) {
		t.Error("a broken config.toml stopped the bus")
	}

	// SIGHUP reloads: off again through a rewrite and a signal.
	_ = os.WriteFile(cfg, []byte("discovery = false\n"), 0o600)
	_ = a.Cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "api.json removed after SIGHUP", func() bool { return !exists(a.apiPath()) })
	if !strings.HasPrefix(hello(), `{"Hello":`) {
		t.Error("the bus stopped answering after SIGHUP")
	}
}

func TestDiscoveryOffAtStart(t *testing.T) {
	home := t.TempDir()
	_ = os.MkdirAll(filepath.Join(home, "krad-ade"), 0o700)
	_ = os.WriteFile(filepath.Join(home, "krad-ade", "config.toml"), []byte("discovery = false\n"), 0o600)
	a := startApp(t, home)
	if !strings.Contains(a.First, "discovery is off") {
		t.Errorf("first line %q does not say discovery is off", a.First)
	}
	time.Sleep(700 * time.Millisecond) // more than one poll of the config file
	if exists(a.apiPath()) {
		t.Error("api.json written although discovery = false")
	}
}

// TestLeadIsNotAConfigChange: --lead adds a terminal to this run, not to config.toml, so the
// first look at the unchanged file applies nothing and api.json is written once.
func TestLeadIsNotAConfigChange(t *testing.T) {
	a := startApp(t, "", "--lead", "sleep 300")
	a.file()
	time.Sleep(700 * time.Millisecond) // more than one poll of the config file
	if log := a.Log.String(); strings.Contains(log, "discovery on") {
		t.Errorf("the unchanged config.toml was applied at start:\n%s", log)
	}
}

func TestBrokenConfigAtStart(t *testing.T) {
	home := t.TempDir()
	_ = os.MkdirAll(filepath.Join(home, "krad-ade"), 0o700)
	_ = os.WriteFile(filepath.Join(home, "krad-ade", "config.toml"), []byte("\n\ndiscovry = false\n"), 0o600)
	bin := testbin.Dir(t)
	cmd := exec.Command(filepath.Join(bin, "krad-ade"))
	cmd.Env = baseEnv(bin, home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatal("krad-ade started with a config.toml it cannot read")
	}
	if !strings.Contains(stderr.String(), "line 3") || !strings.Contains(stderr.String(), "krad-ade: hint:") {
		t.Errorf("stderr %q does not name line 3 and a hint", stderr.String())
	}
	if exists(filepath.Join(home, "krad-ade", "api.json")) {
		t.Error("api.json written")
	}
}

// TestBadInputThroughNC: the spec's bad lines, sent the by-hand way to the real app, each
// answered with its code; the app keeps serving.
func TestBadInputThroughNC(t *testing.T) {
	needNC(t)
	a := startApp(t, "")
	tok := a.token()
	tests := []struct{ line, code string }{
		{"not json\n", "bad_request"},
		{"[1]\n", "bad_request"},
		{fmt.Sprintf(`{"api_version":1,"token":"%s","from":"Client","request":"Explode"}`+"\n", tok), "bad_request"},
		{fmt.Sprintf(`{"api_version":1,"token":"%s","from":"Client","request":{"List":1,"Hello":2}}`+"\n", tok), "bad_request"},
		{`{"api_version":1,"token":"","from":"Client","request":"Hello"}` + "\n", "unauthorized"},
		{`{"api_version":1,"token":"abc","from":"Client","request":"Hello"}` + "\n", "unauthorized"},
		{fmt.Sprintf(`{"api_version":2,"token":"%s","from":"Client","request":"Hello"}`+"\n", tok), "unsupported_api_version"},
		{fmt.Sprintf(`{"api_version":0,"token":"%s","from":"Client","request":"Hello"}`+"\n", tok), "unsupported_api_version"},
		{fmt.Sprintf(`{"api_version":"1","token":"%s","from":"Client","request":"Hello"}`+"\n", tok), "bad_request"},
		{fmt.Sprintf(`{"api_version":1,"token":"%s","request":"Hello"}`+"\n", tok), "bad_request"},
		{fmt.Sprintf(`{"api_version":1,"token":"%s","from":{"Terminal":{"environment":"main","terminal":99}},"request":"List"}`+"\n", tok), "forbidden"},
		{fmt.Sprintf(`{"api_version":1,"token":"%s","from":"Client","request":{"Read":{"target":1}}}`+"\n", tok), "forbidden"},
		{fmt.Sprintf(`{"api_version":1,"token":"%s","from":{"Lead":{"environment":"main","terminal":1}},"request":"List"}`+"\n", tok), "unauthorized"},
		{strings.Repeat("x", 70000) + "\n", "bad_request"},
	}
	for _, tt := range tests {
		got := nc(t, a.Bus, tt.line)
		if !strings.Contains(got, `"code":"`+tt.code+`"`) {
			t.Errorf("%.60q: got %q, want code %s", tt.line, got, tt.code)
		}
		if strings.Contains(got, tok) {
			t.Errorf("an answer carries the token: %q", got)
		}
	}
	if got := nc(t, a.Bus, fmt.Sprintf(`{"api_version":1,"token":"%s","from":"Client","request":"Hello"}`+"\n", tok)); !strings.HasPrefix(got, `{"Hello":`) {
		t.Errorf("after the bad input, Hello got %q", got)
	}
}

// TestLineTimeoutIsTenSeconds: the real app answers a connection that sends no newline with
// bad_request once 10 seconds have passed, and closes it.
func TestLineTimeoutIsTenSeconds(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 10 s")
	}
	t.Parallel()
	a := startApp(t, "")
	conn, err := net.Dial("tcp", a.Bus)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	_, _ = conn.Write([]byte(`{"api_version":1`))
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(conn)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("no answer and no close: %v", err)
	}
	if !strings.Contains(string(got), `"code":"bad_request"`) || !strings.Contains(string(got), "10s") {
		t.Errorf("got %q, want bad_request about 10s", got)
	}
	if took < 10*time.Second-50*time.Millisecond {
		t.Errorf("answered after %v, before the spec's 10 seconds", took)
	}
}

// tmuxIn runs tmux on the app's server under home.
func tmuxIn(home string, args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-L", "krad-ade"}, args...)...)
	cmd.Env = []string{"TMUX_TMPDIR=" + home, "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// tmuxProcesses are the pids of the tmux processes, clients and servers, that run with
// TMUX_TMPDIR=home: those of the apps a test started under home.
func tmuxProcesses(t *testing.T, home string) []int {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal(err)
	}
	tmux, _ = filepath.EvalSymlinks(tmux)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc to look for processes in")
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || exe != tmux {
			continue
		}
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err == nil && slices.Contains(strings.Split(string(environ), "\x00"), "TMUX_TMPDIR="+home) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// steadyTmuxProcesses is tmuxProcesses once two looks 200 ms apart agree (within 10 s): a tmux
// command that the app runs and that ends at once is not one of the processes that stay.
func steadyTmuxProcesses(t *testing.T, home string) []int {
	t.Helper()
	last := tmuxProcesses(t, home)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		now := tmuxProcesses(t, home)
		if slices.Equal(now, last) {
			return now
		}
		last = now
	}
	t.Fatalf("the tmux processes under %s did not settle in 10 s: %v", home, last)
	return nil
}

// TestRefusedStartLeavesNothing: each way krad-ade refuses to start says why and what to do,
// exits 1, and leaves nothing behind: no tmux client or server, no api.json, no token file.
func TestRefusedStartLeavesNothing(t *testing.T) {
	bin := testbin.Dir(t)
	type paths struct{ home, dir, cfg string }
	write := func(t *testing.T, p paths, config string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(p.cfg, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p.cfg, mode); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		rootOnly bool
		setup    func(t *testing.T, p paths)
		wantErr  string // a part of the error line
		exact    bool   // wantErr is all of it: each step is named once
		wantHint string // a part of the hint line
	}{
		{name: "a config folder others can write",
			setup:   func(t *testing.T, p paths) { os.Chmod(p.dir, 0o777) },
			wantErr: "config folder DIR is writable by its group and every user (mode 0777): they could choose the commands krad-ade runs as you", wantHint: "chmod go-w DIR"},
		{name: "a config.toml others can write",
			setup:   func(t *testing.T, p paths) { write(t, p, "quiet = \"2s\"\n", 0o646) },
			wantErr: "config file DIR/config.toml is writable by every user (mode 0646)", wantHint: "chmod go-w DIR/config.toml"},
		{name: "a config.toml of another user", rootOnly: true,
			setup: func(t *testing.T, p paths) {
				write(t, p, "[[terminal]]\ncommand = \"id\"\n", 0o644)
				if err := os.Chown(p.cfg, 65534, 65534); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "config file DIR/config.toml is owned by uid 65534, not by you (uid 0)", wantHint: "sudo chown 0 DIR/config.toml"},
		{name: "a config.toml that is a symlink to a file others can write",
			setup: func(t *testing.T, p paths) {
				other := filepath.Join(p.home, "shared.toml")
				if err := os.WriteFile(other, nil, 0o666); err != nil {
					t.Fatal(err)
				}
				os.Chmod(other, 0o666)
				if err := os.Symlink(other, p.cfg); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "config file DIR/config.toml is writable by its group and every user", wantHint: "chmod go-w DIR/config.toml"},
		{name: "an api.json that is a symlink",
			setup: func(t *testing.T, p paths) {
				if err := os.Symlink("/dev/null", filepath.Join(p.dir, "api.json")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "write DIR/api.json: is a symbolic link: refused", exact: true, wantHint: "set discovery = false in config.toml"},
		{name: "a .krad-ade in the home folder that is a symlink",
			setup: func(t *testing.T, p paths) {
				if err := os.Symlink(t.TempDir(), filepath.Join(p.home, ".krad-ade")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "write the token file: ~/.krad-ade is a symbolic link: refused; remove it", exact: true,
			wantHint: "the local terminals' token file in ~/.krad-ade/run, as on SSH hosts: make ~/.krad-ade a folder of your own"},
		{name: "a terminal of an unknown environment",
			setup: func(t *testing.T, p paths) {
				write(t, p, "[[terminal]]\ntitle = \"t\"\n\nenvironment = \"build\"\n", 0o600)
			},
			wantErr: `config.toml line 4: terminal environment "build" is not named by an [[environment]]`, wantHint: "fix that line"},
		{name: "a tmux socket folder open to others",
			setup: func(t *testing.T, p paths) {
				d := filepath.Join(p.home, fmt.Sprintf("tmux-%d", os.Getuid()))
				if err := os.Mkdir(d, 0o777); err != nil {
					t.Fatal(err)
				}
				os.Chmod(d, 0o777)
			},
			wantErr: "tmux's socket folder HOME/tmux-0 is open to every user (mode 0777)", wantHint: "chmod 700"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.rootOnly {
				testbin.NeedRoot(t, "giving a file to uid 65534")
			}
			home := t.TempDir()
			p := paths{home: home, dir: filepath.Join(home, "krad-ade")}
			p.cfg = filepath.Join(p.dir, "config.toml")
			if err := os.Mkdir(p.dir, 0o700); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, p)
			t.Cleanup(func() { killTmux(home) })

			code, stdout, stderr := apptest.Exit(t, apptest.Options{Program: filepath.Join(bin, "krad-ade"), Env: baseEnv(bin, home)}, 15*time.Second)
			fill := strings.NewReplacer("DIR", p.dir, "HOME", home, "tmux-0", fmt.Sprintf("tmux-%d", os.Getuid()))
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if code != 1 || stdout != "" || len(lines) != 2 ||
				!strings.HasPrefix(lines[0], "krad-ade: error: ") || !strings.Contains(lines[0], fill.Replace(tt.wantErr)) ||
				tt.exact && lines[0] != "krad-ade: error: "+fill.Replace(tt.wantErr) ||
				!strings.HasPrefix(lines[1], "krad-ade: hint: ") || !strings.Contains(lines[1], fill.Replace(tt.wantHint)) {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1, nothing on stdout, and an error with %q and a hint with %q",
					code, stdout, stderr, fill.Replace(tt.wantErr), fill.Replace(tt.wantHint))
			}
			if pids := tmuxProcesses(t, home); len(pids) > 0 {
				t.Errorf("tmux processes of the refused app's socket: %v", pids)
			}
			if _, err := tmuxIn(home, "list-sessions"); err == nil {
				t.Error("the refused app's tmux server answers")
			}
			if fi, err := os.Lstat(filepath.Join(p.dir, "api.json")); err == nil && fi.Mode().IsRegular() {
				t.Error("api.json written")
			}
			if tokens, _ := filepath.Glob(filepath.Join(home, ".krad-ade", "run", "*", "token")); len(tokens) > 0 {
				t.Errorf("token files left: %v", tokens)
			}
		})
	}
}

// TestConfigOthersCanWriteIsNotApplied: while the app runs, a config.toml that others could have
// written changes nothing, and the log says how to fix it; fixed, it is applied.
func TestConfigOthersCanWriteIsNotApplied(t *testing.T) {
	a := startApp(t, "")
	a.file()
	cfg := filepath.Join(a.dir, "config.toml")
	// In place at once with its mode, as a rename puts it: the watcher never sees it owner-only.
	tmp := filepath.Join(a.dir, "tmp")
	if err := os.WriteFile(tmp, []byte("discovery = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, cfg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the log saying how to fix the mode", func() bool {
		return strings.Contains(a.Log.String(), "chmod go-w "+cfg)
	})
	if !exists(a.apiPath()) {
		t.Fatal("a config.toml others can write was applied: api.json removed")
	}
	if err := os.Chmod(cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "api.json removed once config.toml is the user's alone", func() bool { return !exists(a.apiPath()) })
}

// TestOneAppPerConfigFolderAndTmuxServer: a second krad-ade on the first one's config folder, or
// on its tmux server from another folder, refuses to start and names the first one's pid; the
// first keeps its api.json, its session's variables and its tmux, and stays discoverable.
func TestOneAppPerConfigFolderAndTmuxServer(t *testing.T) {
	bin := testbin.Dir(t)
	first := startApp(t, "")
	first.WaitLine(20*time.Second, regexp.MustCompile(`^krad-ade: environment main: `))
	pid := first.PID()
	before, _ := os.ReadFile(first.apiPath())
	first.file()
	endpoint, _ := tmuxIn(first.home, "show-environment", "-t", "main", "KRAD_ADE_ENDPOINT")
	procs := steadyTmuxProcesses(t, first.home)

	refused := func(t *testing.T, env []string, wantErr, wantHint string) {
		t.Helper()
		code, stdout, stderr := apptest.Exit(t, apptest.Options{Program: filepath.Join(bin, "krad-ade"), Env: env}, 15*time.Second)
		if want := "krad-ade: error: " + wantErr + "\nkrad-ade: hint: " + wantHint + "\n"; code != 1 || stdout != "" || stderr != want {
			t.Errorf("the second app: exit %d, stdout %q, stderr\n%s\nwant exit 1 and\n%s", code, stdout, stderr, want)
		}
		if after, _ := os.ReadFile(first.apiPath()); !bytes.Equal(after, before) {
			t.Error("the second app changed the first one's api.json")
		}
		if got, _ := tmuxIn(first.home, "show-environment", "-t", "main", "KRAD_ADE_ENDPOINT"); got != endpoint {
			t.Errorf("the session's KRAD_ADE_ENDPOINT is %q, was %q", got, endpoint)
		}
		if got := steadyTmuxProcesses(t, first.home); !slices.Equal(got, procs) {
			t.Errorf("tmux processes %v, were %v", got, procs)
		}
	}
	t.Run("the same config folder", func(t *testing.T) {
		refused(t, baseEnv(bin, first.home),
			fmt.Sprintf("another krad-ade (pid %d) runs on the config folder %s", pid, first.dir),
			fmt.Sprintf("stop it first (kill %d): two apps on one config folder would take over each other's api.json and terminals", pid))
	})
	t.Run("another config folder on the same tmux server", func(t *testing.T) {
		other := t.TempDir()
		env := append(baseEnv(bin, first.home), "XDG_CONFIG_HOME="+other) // the last one wins
		refused(t, env,
			fmt.Sprintf("another krad-ade (pid %d) drives the tmux server krad-ade (%s/tmux-%d/krad-ade), from another config folder", pid, first.home, os.Getuid()),
			fmt.Sprintf("stop it first (kill %d): two apps on one tmux server would drive the same sessions; to run a second app, give it its own config folder and tmux server (TMUX_TMPDIR)", pid))
		if exists(filepath.Join(other, "krad-ade", "api.json")) {
			t.Error("the refused app wrote api.json in its own folder")
		}
	})
	// The first is still the one krad finds.
	cmd := exec.Command(filepath.Join(bin, "krad"), "api")
	cmd.Env = baseEnv(bin, first.home)
	out, err := cmd.Output()
	if want := fmt.Sprintf("pid %d · %s", pid, first.Bus); err != nil || !strings.Contains(string(out), want) {
		t.Errorf("krad api: %q, %v; want %q", out, err, want)
	}
	// Once it stops, another starts there.
	first.stop(syscall.SIGTERM)
	second := startApp(t, first.home)
	if got := second.file()["pid"]; got != float64(second.PID()) {
		t.Errorf("api.json names pid %v, want the second app's %d", got, second.PID())
	}
}

// TestLocalTerminalsKeepTheBusAcrossRestarts: a terminal opened by one run of the app reaches
// the bus of the next, through the same port and the token file the app rewrites at each start.
func TestLocalTerminalsKeepTheBusAcrossRestarts(t *testing.T) {
	up := regexp.MustCompile(`^krad-ade: environment main: `)
	a := startApp(t, "")
	a.WaitLine(20*time.Second, up)
	a.file()
	// The terminal the first run opened: the shell of main:1.
	window, err := tmuxIn(a.home, "list-windows", "-t", "main", "-f", "#{==:#{@krad_terminal},main:1}", "-F", "#{window_id}")
	if err != nil || window == "" {
		t.Fatalf("no window of main:1: %q, %v", window, err)
	}
	tokenFile, _ := tmuxIn(a.home, "show-environment", "-t", "main", "KRAD_ADE_TOKEN_FILE")
	tokenFile = strings.TrimPrefix(tokenFile, "KRAD_ADE_TOKEN_FILE=")

	a.stop(syscall.SIGTERM)
	if exists(tokenFile) {
		t.Error("the token file outlived the app's clean exit")
	}
	b := startApp(t, a.home)
	b.WaitLine(20*time.Second, up)
	if b.Bus != a.Bus {
		t.Errorf("the second run's bus is on %s, the first's was on %s: the terminals look for the first", b.Bus, a.Bus)
	}

	if _, err := tmuxIn(a.home, "send-keys", "-t", window, `krad list; echo "rc=$?"`, "Enter"); err != nil {
		t.Fatal(err)
	}
	var screen string
	waitFor(t, "krad list's exit status in main:1", func() bool {
		screen, _ = tmuxIn(a.home, "capture-pane", "-p", "-t", window)
		return regexp.MustCompile(`(?m)^rc=\d+$`).MatchString(screen)
	})
	if !strings.Contains(screen, "rc=0") || !regexp.MustCompile(`(?m)^main:1\s+shell\s`).MatchString(screen) {
		t.Errorf("krad list in a terminal of the first run, after the restart:\n%s", screen)
	}

	// The file: in ~/.krad-ade/run, owner-only, holding the current run's token.
	if !strings.HasPrefix(tokenFile, filepath.Join(a.home, ".krad-ade", "run")+"/") {
		t.Fatalf("KRAD_ADE_TOKEN_FILE = %q, want a file in ~/.krad-ade/run", tokenFile)
	}
	if fi, err := os.Lstat(tokenFile); err != nil || fi.Mode() != 0o600 {
		t.Errorf("the token file: %v, %v; want a regular file of mode 0600", fi, err)
	}
	if di, err := os.Stat(filepath.Dir(tokenFile)); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("its folder: %v, %v; want mode 700", di, err)
	}
	if got, _ := os.ReadFile(tokenFile); string(got) != b.token()+"\n" {
		t.Error("the token file does not hold the token of the second run's api.json")
	}
}

// roundTrip writes one line to the bus and returns the answer, as nc would.
func roundTrip(t *testing.T, endpoint, line string) string {
	t.Helper()
	c, err := net.Dial("tcp", endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, line); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	return string(got)
}

// sendQueue is the largest send queue, in bytes, of the established TCP connections whose local
// port is port: what the bus has written to its clients that they have not read.
func sendQueue(t *testing.T, port string) int {
	t.Helper()
	most := 0
	for _, s := range tcptest.Local(t, port) {
		if s.State == tcptest.Established {
			most = max(most, s.TxQueue)
		}
	}
	return most
}

// TestStopWithAStoppedWatcher is the case: a `krad watch` that is stopped (SIGSTOP, as
// a suspended one is) while the app keeps sending it events, until its socket is full and the
// app's write to it blocks; and connections that sent no line. SIGTERM still ends the app within
// a few seconds, and api.json is gone.
func TestStopWithAStoppedWatcher(t *testing.T) {
	t.Parallel()
	// Four terminals with the longest title, so that each event is long and the watcher's socket
	// fills after fewer of them.
	home := t.TempDir()
	_ = os.MkdirAll(filepath.Join(home, "krad-ade"), 0o700)
	config := strings.Repeat("[[terminal]]\ntitle = \""+strings.Repeat("w", 200)+"\"\ncommand = \"sleep 300\"\n", 4)
	_ = os.WriteFile(filepath.Join(home, "krad-ade", "config.toml"), []byte(config), 0o600)
	a := startApp(t, home)
	a.WaitLine(20*time.Second, regexp.MustCompile(`^krad-ade: environment main: `))
	tok := a.token()
	bin := testbin.Dir(t)
	watch := exec.Command(filepath.Join(bin, "krad"), "watch", "--json")
	watch.Env = baseEnv(bin, a.home)
	var out apptest.Buffer
	watch.Stdout, watch.Stderr = &out, &out
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = watch.Process.Kill(); _ = watch.Wait() })
	waitFor(t, "krad watch printed the agents", func() bool { return strings.HasPrefix(out.String(), `{"Agents":`) })
	if err := watch.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}

	// Each terminal reports working, then idle, and so on: an event each. Rounds of 4 × 50
	// reports until the bus's send queue stops growing: its write to the watcher blocks, with far
	// fewer events queued behind it than would drop the watcher (1,024).
	_, port, _ := net.SplitHostPort(a.Bus)
	report := func(terminal int, state string) string {
		return fmt.Sprintf(`{"api_version":1,"token":%q,"from":{"Terminal":{"environment":"main","terminal":%d}},"request":{"Report":{"state":%q}}}`+"\n", tok, terminal, state)
	}
	last, full := -1, false
	for round := 0; round < 300 && !full; round++ {
		var wg sync.WaitGroup
		for n := 1; n <= 4; n++ {
			wg.Go(func() {
				for i := range 50 {
					if got := roundTrip(t, a.Bus, report(n, [2]string{"working", "idle"}[i%2])); got != `"Ok"`+"\n" {
						t.Errorf("Report got %q", got)
						return
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		time.Sleep(50 * time.Millisecond)
		q := sendQueue(t, port)
		full = q > 0 && q == last
		last = q
	}
	if !full {
		t.Fatalf("the watcher's socket did not fill up (send queue %d bytes)", last)
	}
	t.Logf("the bus holds %d bytes the stopped watcher has not read", last)

	// Connections without a line: one silent, one with half a line.
	for _, line := range []string{"", `{"api_version":1,`} {
		c, err := net.Dial("tcp", a.Bus)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, line)
	}
	time.Sleep(100 * time.Millisecond)

	code, took := a.Stop(syscall.SIGTERM, 5*time.Second)
	if code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
	t.Logf("krad-ade stopped %v after SIGTERM", took)
	if exists(a.apiPath()) {
		t.Error("api.json is still there after the app stopped")
	}
}

// memoryOf reads a field of /proc/PID/status in KiB: VmRSS (resident now) or VmHWM (the peak).
func memoryOf(t *testing.T, pid int, field string) int {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("%s in /proc/%d/status: %q", field, pid, v)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestFloodOfPartialLines is the attack on the real app: 5,000 connections, each holding
// 64,000 bytes with no newline. The app's resident memory stays within the README's budget, and
// it answers a terminal's request and Hello all along.
func TestFloodOfPartialLines(t *testing.T) {
	a := startApp(t, "", "--lead", "sleep 300")
	a.WaitLine(20*time.Second, regexp.MustCompile(`^krad-ade: environment main: `))
	tok := a.token()
	pid := a.PID()
	before := memoryOf(t, pid, "VmRSS")

	f := floodtest.Start(t, floodtest.Options{Addr: a.Bus, Conns: 5000, Partial: 64000})
	list := fmt.Sprintf(`{"api_version":1,"token":%q,"from":{"Terminal":{"environment":"main","terminal":1}},"request":"List"}`+"\n", tok)
	hello := fmt.Sprintf(`{"api_version":1,"token":%q,"from":"Client","request":"Hello"}`+"\n", tok)
	asked := f.Probe(t, 20, 20*time.Millisecond, func() {
		if got := roundTrip(t, a.Bus, list); !strings.HasPrefix(got, `{"Agents":[{"environment":"main","terminal":1,`) {
			t.Fatalf("during the flood, terminal 1's List got %q", got)
		}
		if got := roundTrip(t, a.Bus, hello); !strings.HasPrefix(got, `{"Hello":`) {
			t.Fatalf("during the flood, Hello got %q", got)
		}
	})
	peak := memoryOf(t, pid, "VmHWM")
	t.Logf("krad-ade's resident memory: %.1f MiB before the flood, at most %.1f MiB during it (%d requests answered)", float64(before)/1024, float64(peak)/1024, 2*asked)
	// The README's budget: a flood adds at most 24 MiB to the app's resident memory.
	if grew := peak - before; grew > 24<<10 {
		t.Errorf("the flood took krad-ade's resident memory %.1f MiB up, over the budget of 24 MiB", float64(grew)/1024)
	}
}

// TestHalfCloseWithNC: `printf … | nc -N` (a half-close after the line) gets its answer from the
// real app for Read, Wait, Check with a wait, and SubscribeAgents, whose events keep coming; and
// nc killed while its Wait waits (a close) cancels it: the app closes its side within seconds.
func TestHalfCloseWithNC(t *testing.T) {
	needNC(t)
	t.Parallel()
	home := t.TempDir()
	_ = os.MkdirAll(filepath.Join(home, "krad-ade"), 0o700)
	config := "[[terminal]]\ntitle = \"lead\"\ncommand = \"sleep 300\"\nlead = true\n" +
		// The ticker says it is working, as well as printing: its Waits must not end by
		// themselves, and a loaded machine can delay its output past the quiet spell.
		"[[terminal]]\ntitle = \"ticker\"\ncommand = \"krad report working; while :; do echo tick; sleep 0.2; done\"\n"
	_ = os.WriteFile(filepath.Join(home, "krad-ade", "config.toml"), []byte(config), 0o600)
	a := startApp(t, home)
	a.WaitLine(20*time.Second, regexp.MustCompile(`^krad-ade: environment main: `))
	tok := a.token()
	host, port, _ := net.SplitHostPort(a.Bus)
	line := func(request string) string {
		return fmt.Sprintf(`{"api_version":1,"token":%q,"from":{"Terminal":{"environment":"main","terminal":1}},"request":%s}`+"\n", tok, request)
	}
	ncN := func(request string) (*exec.Cmd, *apptest.Buffer) {
		cmd := exec.Command("nc", "-N", host, port)
		cmd.Stdin = strings.NewReader(line(request))
		var out apptest.Buffer
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, &out
	}
	answer := func(request string) string {
		cmd, out := ncN(request)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("nc -N with %s: no answer within 20 s", request)
		}
		return out.String()
	}
	waitFor(t, "the ticker prints", func() bool {
		return strings.Contains(roundTrip(t, a.Bus, line(`{"Read":{"target":2}}`)), "tick")
	})

	if got := answer(`{"Read":{"target":2}}`); !strings.HasPrefix(got, `{"Screen":{"terminal":2,`) {
		t.Errorf("Read through nc -N got %q", got)
	}
	if got := answer(`{"Check":{"target":1,"wait_secs":1}}`); !strings.HasPrefix(got, `{"Agent":{"environment":"main","terminal":1,`) {
		t.Errorf("Check with a wait through nc -N got %q", got)
	}
	if got := answer(`{"Wait":{"target":2,"timeout_secs":1}}`); got != `"TimedOut"`+"\n" {
		t.Errorf("Wait on the ticker (never settles) through nc -N got %q, want \"TimedOut\"", got)
	}

	_, out := ncN(`"SubscribeAgents"`)
	waitFor(t, "the subscription's snapshot", func() bool { return strings.HasPrefix(out.String(), `{"Agents":`) })
	time.Sleep(500 * time.Millisecond) // past the bus's first looks at nc's end
	if got := roundTrip(t, a.Bus, line(`{"Report":{"state":"working","message":"go"}}`)); got != `"Ok"`+"\n" {
		t.Fatalf("Report got %q", got)
	}
	waitFor(t, "the subscription's event", func() bool { return strings.Contains(out.String(), `{"AgentEvent":`) })

	// A Wait that waits, from nc -N: held while nc lives, cancelled once it is killed. nc's
	// connection is told from the others by its port: counting the port's half-closed
	// connections took an earlier nc's, still closing, for this one's.
	before := tcptest.Peers(t, port, tcptest.CloseWait)
	wait, out := ncN(`{"Wait":{"target":2,"timeout_secs":600}}`)
	ncPort := 0
	waitFor(t, "the app holds nc's half-closed connection", func() bool {
		for p := range tcptest.Peers(t, port, tcptest.CloseWait) {
			if !before[p] {
				ncPort = p
				return true
			}
		}
		return false
	})
	time.Sleep(time.Second)
	if !tcptest.Peers(t, port, tcptest.CloseWait)[ncPort] || out.String() != "" {
		t.Fatalf("the Wait ended by itself (%q)", out.String())
	}
	_ = wait.Process.Kill()
	waitFor(t, "the app closed its side after nc was killed", func() bool { return !tcptest.Peers(t, port, tcptest.CloseWait)[ncPort] })
}
