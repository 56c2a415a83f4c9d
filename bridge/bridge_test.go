package bridge_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/bridge"
	"github.com/krad-ade/krad/forward"
	"github.com/krad-ade/krad/internal/testbin"
	"github.com/krad-ade/krad/internal/version"
	"github.com/krad-ade/krad/local"
	"github.com/krad-ade/krad/remote/sshdtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// world is the app on this computer with one SSH environment, "build", on a real sshd started by
// the test (the host is this machine, seen through sshd as another would be).
type world struct {
	t      *testing.T
	sshd   *sshdtest.Server
	bridge *bridge.Environment
	app    *app.App
	bus    *local.Server
	token  api.Token
	lead   api.Token
	tmpdir string // the host's TMUX_TMPDIR: its tmux server is the test's own
	states chan string
}

// worldOptions change the world startWorldWith starts.
type worldOptions struct {
	hostEnv []string     // more variables for the host's sessions
	log     *slog.Logger // the app's
	noWait  bool         // return without waiting for the environments to come up
}

func startWorld(t *testing.T) *world { return startWorldWith(t, worldOptions{}) }

func startWorldWith(t *testing.T, o worldOptions) *world {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is missing in CI")
		}
		t.Skip("tmux is missing")
	}
	bin := testbin.Dir(t)
	w := &world{t: t, tmpdir: t.TempDir(), states: make(chan string, 64)}
	w.sshd = sshdtest.Start(t, sshdtest.Options{Env: append([]string{"TMUX_TMPDIR=" + w.tmpdir}, o.hostEnv...)})
	t.Cleanup(func() {
		cmd := exec.Command("tmux", "-L", app.SocketName, "kill-server")
		cmd.Env = []string{"TMUX_TMPDIR=" + w.tmpdir, "PATH=/usr/bin:/bin"}
		_ = cmd.Run()
	})
	host, port, _ := strings.Cut(w.sshd.Addr, ":")
	sshConfig := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(sshConfig, []byte(fmt.Sprintf(`Host buildbox
  HostName %s
  Port %s
  User %s
  IdentityFile %s
  IdentitiesOnly yes
  UserKnownHostsFile %s
  StrictHostKeyChecking yes
`, host, port, w.sshd.User, w.sshd.KeyFile, w.sshd.KnownHosts)), 0o600); err != nil {
		t.Fatal(err)
	}
	w.token, _ = api.NewToken()
	w.lead, _ = api.NewToken()
	ln, err := local.ListenLoopback("")
	if err != nil {
		t.Fatal(err)
	}
	localSock := filepath.Join(t.TempDir(), "local.sock")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", localSock, "kill-server").Run() })
	w.bridge = bridge.New(bridge.Config{
		Name:     "build",
		Token:    w.token,
		Instance: "test-instance",
		BinDir:   bin,
		Version:  version.Build,
		Forward: forward.Config{
			Host:         "buildbox",
			Target:       func(ctx context.Context) (net.Conn, error) { return w.bus.Pipe(ctx, local.FromForward("build")) },
			UserConfig:   sshConfig,
			SystemConfig: forward.None,
			AgentSocket:  forward.None,
			OnStatus:     func(s forward.Status) { w.states <- s.String() },
		},
	})
	w.app = app.New(app.Config{
		Endpoint: ln.Addr().String(),
		Token:    w.token,
		BinDir:   bin,
		Path:     "/usr/local/bin:/usr/bin:/bin",
		Tmux:     app.TmuxConfig{SocketPath: localSock, ConfigFile: "/dev/null", Env: []string{"PATH=/usr/bin:/bin", "SHELL=/bin/sh"}},
		Quiet:    500 * time.Millisecond,
		Terminals: []app.TerminalSpec{
			{Environment: "build", Title: "lead", Lead: true},
			{Environment: app.Local, Title: "local lead", Lead: true},
		},
		Remotes: []app.Remote{{Name: "build", Host: w.bridge}},
		Logger:  o.log,
	})
	w.bus, err = local.Listen(local.Config{BusToken: w.token, LeadToken: w.lead, Build: version.Build, Handler: w.app, Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 3)
	go func() { _ = w.bus.Serve(ctx); done <- struct{}{} }()
	go func() { _ = w.app.Run(ctx); done <- struct{}{} }()
	bctx, stopBridge := context.WithCancel(context.Background())
	go func() { _ = w.bridge.Run(bctx); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		cctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		_ = w.bridge.Cleanup(cctx)
		c()
		stopBridge()
		for range 3 {
			<-done
		}
	})
	if o.noWait {
		return w
	}
	select {
	case <-w.app.ReadyOf("build"):
	case <-time.After(60 * time.Second):
		t.Fatalf("environment build did not come up in 60 s: %s\nsshd:\n%s", w.bridge.Status(), w.sshd.Log())
	}
	select {
	case <-w.app.Ready():
	case <-time.After(60 * time.Second):
		t.Fatal("environment main did not come up in 60 s")
	}
	return w
}

func (w *world) as(n int) *api.Client {
	return &api.Client{Endpoint: w.bus.Addr(), Token: w.token, From: api.FromTerminal(api.TerminalID{Environment: "build", Terminal: n})}
}

func (w *world) call(c *api.Client, name api.Name, body any, v any, answer string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := c.Call(ctx, api.NewRequest(name, body))
	if err != nil {
		w.t.Fatalf("%s: %v", name, err)
	}
	if v != nil {
		if err := a.Decode(answer, v); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *world) screen(c *api.Client, n int, want string) string {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var s api.Screen
	for time.Now().Before(deadline) {
		w.call(c, api.Read, &api.ReadBody{Target: api.Target(n)}, &s, "Screen")
		if strings.Contains(s.Text, want) {
			return s.Text
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.t.Fatalf("build:%d never showed %q:\n%s", n, want, s.Text)
	return ""
}

// TestRemoteTerminal is the transcript: a terminal the app opened on the SSH host runs
// the static krad the app installed there, through the tunnel, with the variables of the spec and
// no KRAD_ADE_TOKEN.
func TestRemoteTerminal(t *testing.T) {
	w := startWorld(t)
	lead := w.as(1)
	var worker api.Agent
	w.call(lead, api.Spawn, &api.SpawnBody{Title: "remote", Command: []string{"sh", "-c",
		`env | grep '^KRAD_ADE' | sort; echo "path=$PATH"; krad api; krad list; echo "rc=$?"; sleep 120`}}, &worker, "Agent")
	if worker.Environment != "build" {
		t.Fatalf("the worker is in %s, want build", worker.Environment)
	}
	screen := w.screen(lead, worker.Terminal, "rc=")
	vars := w.bridge.Vars()
	for _, want := range []string{
		"KRAD_ADE_ENDPOINT=" + vars.Endpoint,
		"KRAD_ADE_TERMINAL=build:" + fmt.Sprint(worker.Terminal),
		"KRAD_ADE_TOKEN_FILE=" + vars.TokenFile,
		"path=" + vars.BinDir + ":",
		"agents API v1 · build " + version.Build,
		"(found through KRAD_ADE_ENDPOINT)",
		"rc=0",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the remote terminal's screen lacks %q:\n%s", want, screen)
		}
	}
	if !regexp.MustCompile(`build:1 +lead`).MatchString(screen) {
		t.Errorf("krad list on the host does not show the lead:\n%s", screen)
	}
	if regexp.MustCompile(`(?m)^KRAD_ADE_TOKEN=`).MatchString(screen) {
		t.Errorf("a remote terminal has KRAD_ADE_TOKEN:\n%s", screen)
	}
	if strings.Contains(screen, w.token.Reveal()) {
		t.Error("the token is on the remote screen")
	}
	if !strings.HasPrefix(vars.Endpoint, "127.0.0.1:") {
		t.Errorf("the forward is at %s, want the host's 127.0.0.1", vars.Endpoint)
	}
	if !strings.HasPrefix(vars.BinDir, w.sshd.Home+"/.krad-ade/bin/"+version.Build) {
		t.Errorf("krad installed in %s, want under the host's ~/.krad-ade/bin/%s", vars.BinDir, version.Build)
	}
	// The token file: owner-only, in an owner-only folder; removed at a clean exit.
	fi, err := os.Stat(vars.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	di, _ := os.Stat(filepath.Dir(vars.TokenFile))
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("token file %o in folder %o, want 600 in 700", fi.Mode().Perm(), di.Mode().Perm())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.bridge.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(vars.TokenFile); !os.IsNotExist(err) {
		t.Errorf("the token file is still there after Cleanup: %v", err)
	}
}

// TestRemoteTitlesAreText: on an SSH host too, a title reaches tmux as text: the worker's window
// is named exactly its title, and the #(…) in it runs nothing.
func TestRemoteTitlesAreText(t *testing.T) {
	w := startWorld(t)
	lead := w.as(1)
	ran := filepath.Join(t.TempDir(), "ran")
	title := "fix #(touch " + ran + ") bug #{KRAD_ADE_TOKEN_FILE} ##[x]"
	var worker api.Agent
	w.call(lead, api.Spawn, &api.SpawnBody{Title: title, Command: []string{"sh", "-c",
		`echo "name=[$(tmux display-message -p -t "$TMUX_PANE" '#{window_name}')]"; sleep 120`}}, &worker, "Agent")
	screen := w.screen(lead, worker.Terminal, "name=")
	if !strings.Contains(screen, "name=["+title+"]") {
		t.Errorf("the worker's window is not named its title %q:\n%s", title, screen)
	}
	time.Sleep(300 * time.Millisecond) // format jobs run in the background
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("the title's #(touch %s) ran on the host", ran)
	}
}
