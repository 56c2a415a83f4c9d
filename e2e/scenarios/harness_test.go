//go:build e2e

package scenarios_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/e2e"
	"github.com/krad-ade/krad/internal/version"
	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// user is a person's side of the scenarios: this machine's HOME with its ~/.ssh/config and
// known_hosts (from e2e.WriteSSHConfig), the app's config folder (XDG_CONFIG_HOME), and a tmux
// socket folder of the test's own (TMUX_TMPDIR), so that the local environment's tmux server is
// the test's and is ended with it. The programs are testbin's: krad-ade, krad, krad-ade-agents
// and the static krad the app installs on hosts.
type user struct {
	t       *testing.T
	bin     string
	home    string
	config  string
	tmuxDir string
	ssh     *e2e.SSHConfig

	mu     sync.Mutex
	tokens []string // every token read from api.json: no log may hold one
}

// newUser makes the user's folders and writes the ssh_config (as ~/.ssh/config) and known_hosts
// for entries.
func newUser(t *testing.T, entries ...e2e.SSHEntry) *user {
	t.Helper()
	base := t.TempDir()
	u := &user{t: t, bin: testbin.Dir(t), home: filepath.Join(base, "home"), config: filepath.Join(base, "config")}
	// A short folder: tmux's socket path must fit in a sockaddr_un.
	tmuxDir, err := os.MkdirTemp("", "krad-e2e-tmux-")
	if err != nil {
		t.Fatal(err)
	}
	u.tmuxDir = tmuxDir
	t.Cleanup(func() {
		cmd := exec.Command("tmux", "-L", "krad-ade", "kill-server")
		cmd.Env = []string{"TMUX_TMPDIR=" + u.tmuxDir, "PATH=/usr/bin:/bin"}
		_ = cmd.Run()
		os.RemoveAll(u.tmuxDir)
	})
	for _, d := range []string{filepath.Join(u.home, ".ssh"), u.config} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	u.ssh = e2e.WriteSSHConfig(t, filepath.Join(u.home, ".ssh"), entries...)
	conf, err := os.ReadFile(u.ssh.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(u.home, ".ssh", "config"), conf, 0o600); err != nil {
		t.Fatal(err)
	}
	return u
}

// env is the environment the user's programs start with: no agent (the ssh_config's
// IdentityFile is the key), the programs' folder first on PATH.
func (u *user) env() []string {
	return []string{
		"PATH=" + u.bin + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + u.home,
		"XDG_CONFIG_HOME=" + u.config,
		"TMUX_TMPDIR=" + u.tmuxDir,
		"SHELL=/bin/sh",
		"SSH_AUTH_SOCK=",
		"LANG=C.UTF-8",
	}
}

func (u *user) apiJSON() string { return filepath.Join(u.config, "krad-ade", "api.json") }

// writeConfig writes the app's config.toml.
func (u *user) writeConfig(toml string) {
	u.t.Helper()
	dir := filepath.Join(u.config, "krad-ade")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		u.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(toml), 0o600); err != nil {
		u.t.Fatal(err)
	}
}

// environments is config.toml's [[environment]] tables, each named for its ssh_config alias.
func environments(aliases ...string) string {
	var b strings.Builder
	for _, a := range aliases {
		fmt.Fprintf(&b, "[[environment]]\nname = %q\nssh = %q\n\n", a, a)
	}
	return b.String()
}

// leadOn is a [[terminal]] table: a lead shell on env.
func leadOn(env string) string {
	return fmt.Sprintf("[[terminal]]\nenvironment = %q\ntitle = \"lead\"\nlead = true\n\n", env)
}

// single is the setup most scenarios share: host a alone on a network of its own, at .11, and a
// user whose config.toml makes it environment a, with a lead shell there (a:1), the app started
// and a connected.
type single struct {
	lan   *e2e.Network
	a     *e2e.Host
	u     *user
	app   *kradApp
	watch *watcher   // krad watch --json, started before a connected; nil unless asked for
	c     connection // a's
	lead  *term      // a:1; nil with noLead
}

// singleOptions change what oneHost sets up.
type singleOptions struct {
	ssh    []string        // more ssh_config lines for a, such as keepalive
	config string          // more config.toml, after a's [[environment]] and its lead
	noLead bool            // no lead on a, and no wait for one
	watch  bool            // start krad watch --json before a is connected
	before func(*e2e.Host) // runs on host a before the app starts
	dir    string          // environment a's folder on the host (dir = …); "" is the home
	arch   string          // host a's processor (arm64), when not this machine's
}

// oneHost sets up single on the network 172.29.subnet.0/24 (see main_test.go for who uses which).
func oneHost(t *testing.T, subnet int, o singleOptions) *single {
	t.Helper()
	s := &single{lan: e2e.NewNetwork(t, "lan", subnet)}
	s.a = e2e.StartHost(t, "a", s.lan, s.lan.Addr(11), e2e.HostOptions{Arch: o.arch})
	if o.before != nil {
		o.before(s.a)
	}
	s.u = newUser(t, e2e.SSHEntry{Alias: "a", Host: s.a, Options: o.ssh})
	config := environments("a")
	if o.dir != "" {
		config = strings.TrimSuffix(config, "\n") + fmt.Sprintf("dir = %q\n\n", o.dir)
	}
	if !o.noLead {
		config += leadOn("a")
	}
	s.u.writeConfig(config + o.config)
	started := time.Now()
	s.app = s.u.start()
	if o.watch || o.arch != "" {
		s.watch = s.u.watch()
	}
	shell := 30 * time.Second
	if o.arch == "" {
		s.c = s.app.connected("a", 60*time.Second)
	} else {
		// An emulated host runs every program 10 to 20 times slower, and the app's line about a
		// waits 15 s only: its AppEvent tells when it is connected.
		shell = 2 * time.Minute
		_, e := s.watch.waitFor(0, 5*time.Minute, "a connected", connectedState("a"))
		fwd, _, _ := strings.Cut(strings.TrimPrefix(e.app.Message, "connected: "), " ")
		s.c = connection{host: "a", forward: fwd, after: e.at.Sub(started)}
		// Its tmux session follows.
		s.watch.waitFor(0, 2*time.Minute, "a up", func(e watchEvent) bool {
			return e.app != nil && e.app.Kind == api.EnvironmentUp && e.app.Environment == "a"
		})
	}
	if !o.noLead {
		s.lead = findTerminal(t, s.a, "a", "a:1", shell)
	}
	return s
}

// apiFile is what the test reads of api.json.
type apiFile struct {
	Endpoint string `json:"endpoint"`
	Token    string `json:"token"`
	PID      int    `json:"pid"`
}

// readAPI reads api.json; the token it holds is kept, so that the logs can be checked for it.
func (u *user) readAPI() apiFile {
	u.t.Helper()
	b, err := os.ReadFile(u.apiJSON())
	if err != nil {
		u.t.Fatalf("read api.json: %v", err)
	}
	var f apiFile
	if err := json.Unmarshal(b, &f); err != nil {
		u.t.Fatalf("api.json: %v", err)
	}
	if len(f.Token) != api.TokenLen {
		u.t.Fatalf("api.json: the token has %d characters, want %d", len(f.Token), api.TokenLen)
	}
	u.mu.Lock()
	u.tokens = append(u.tokens, f.Token)
	u.mu.Unlock()
	return f
}

// secrets are the tokens read so far.
func (u *user) secrets() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.tokens...)
}

// krad runs this machine's krad as the user, outside the app's terminals: a Client that finds
// the bus through api.json.
func (u *user) krad(args ...string) (stdout, stderr string, code int) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(u.bin, "krad"), args...)
	cmd.Env = u.env()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		u.t.Fatalf("krad %q: %v", args, err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// kradApp is one run of krad-ade, started as a child process in the user's environment.
type kradApp struct {
	*apptest.App
	u *user
}

// start starts krad-ade and waits for its first line (the bus and api.json). It is stopped with
// SIGTERM when the test ends, if it still runs, and its log is printed if the test failed.
func (u *user) start() *kradApp {
	u.t.Helper()
	return &kradApp{u: u, App: apptest.Start(u.t, apptest.Options{
		Program:    filepath.Join(u.bin, "krad-ade"),
		Env:        u.env(),
		Secrets:    u.secrets,
		StopWithin: 30 * time.Second,
	})}
}

// stop sends sig and waits for the app to exit; it returns the exit code and how long the app
// took.
func (a *kradApp) stop(sig syscall.Signal) (int, time.Duration) {
	a.u.t.Helper()
	return a.Stop(sig, 30*time.Second)
}

// connection is what the app's line about a connected SSH environment says.
type connection struct {
	host    string        // "connected to HOST"
	forward string        // the forward on the host, 127.0.0.1:PORT
	krad    string        // the build installed
	attach  string        // the command to attach to its terminals
	after   time.Duration // from the app's start to the line
}

func (c connection) port() string { return c.forward[strings.LastIndex(c.forward, ":")+1:] }

// connected waits for the line saying that environment env is connected, and fails the test with
// the app's log when the app says it is not up instead.
func (a *kradApp) connected(env string, d time.Duration) connection {
	t := a.u.t
	t.Helper()
	q := regexp.QuoteMeta(env)
	up := regexp.MustCompile(`^krad-ade: environment ` + q + `: connected to (\S+) \(forward (127\.0\.0\.1:\d+) on the host\), krad (\S+) installed; (ssh -t .*)$`)
	notUp := regexp.MustCompile(`^krad-ade: environment ` + q + ` is not up yet: (.*)$`)
	m, i := a.WaitLine(d, up, notUp)
	if i == 1 {
		t.Fatalf("environment %s did not come up: %q; the app's log:\n%s", env, m[1], a.Log)
	}
	return connection{host: m[1], forward: m[2], krad: m[3], attach: m[4], after: a.LineAt("krad-ade: environment " + env + ": connected")}
}

// logHas waits until the app's log has a line with every one of parts, and returns it.
func (a *kradApp) logHas(d time.Duration, parts ...string) string {
	t := a.u.t
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		for _, l := range strings.Split(a.Log.String(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(l, p)
			}
			if all {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the app's log has no line with %q within %v:\n%s", parts, d, a.Log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// watcher is `krad watch --json` run on this machine by the user: a Client of the app.
type watcher struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *apptest.Buffer

	mu     sync.Mutex
	events []watchEvent
}

// watchEvent is one line of krad watch --json.
type watchEvent struct {
	at     time.Time
	line   string
	agents []api.Agent     // {"Agents":[…]}
	agent  *api.AgentEvent // {"AgentEvent":…}
	app    *api.AppEvent   // {"AppEvent":…}
}

// watch starts `krad watch --json` and waits for its first line, the snapshot. It ends with the
// test.
func (u *user) watch() *watcher {
	t := u.t
	t.Helper()
	w := &watcher{t: t, stderr: &apptest.Buffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	w.cmd = exec.CommandContext(ctx, filepath.Join(u.bin, "krad"), "watch", "--json")
	w.cmd.Env = u.env()
	w.cmd.Stderr = w.stderr
	w.cmd.WaitDelay = 5 * time.Second
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			e := watchEvent{at: time.Now(), line: sc.Text()}
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				if raw, ok := m["Agents"]; ok {
					_ = json.Unmarshal(raw, &e.agents)
				}
				if raw, ok := m["AgentEvent"]; ok {
					e.agent = &api.AgentEvent{}
					_ = json.Unmarshal(raw, e.agent)
				}
				if raw, ok := m["AppEvent"]; ok {
					e.app = &api.AppEvent{}
					_ = json.Unmarshal(raw, e.app)
				}
			}
			w.mu.Lock()
			w.events = append(w.events, e)
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = w.cmd.Wait()
		<-done
		if t.Failed() {
			t.Logf("krad watch --json said:\n%s\nstderr: %s", w.String(), w.stderr)
		}
	})
	w.waitFor(0, 20*time.Second, "the snapshot", func(e watchEvent) bool { return e.agents != nil || strings.HasPrefix(e.line, `{"Agents":`) })
	return w
}

func (w *watcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, e := range w.events {
		fmt.Fprintf(&b, "%s %s\n", e.at.Format("15:04:05.000"), e.line)
	}
	return b.String()
}

// count is how many lines the watch has printed so far.
func (w *watcher) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.events)
}

// find is the first event from index from on that satisfies ok, and its index; -1 if none yet.
func (w *watcher) find(from int, ok func(watchEvent) bool) (int, watchEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := from; i < len(w.events); i++ {
		if ok(w.events[i]) {
			return i, w.events[i]
		}
	}
	return -1, watchEvent{}
}

// waitFor waits for an event from index from on that satisfies ok.
func (w *watcher) waitFor(from int, d time.Duration, what string, ok func(watchEvent) bool) (int, watchEvent) {
	w.t.Helper()
	deadline := time.Now().Add(d)
	for {
		if i, e := w.find(from, ok); i >= 0 {
			return i, e
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("krad watch --json showed no %s within %v; it said:\n%s\nstderr: %s", what, d, w, w.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// envState matches an environment_state AppEvent of env whose message satisfies ok.
func envState(env string, ok func(msg string) bool) func(watchEvent) bool {
	return func(e watchEvent) bool {
		return e.app != nil && e.app.Kind == api.EnvironmentState && e.app.Environment == env && ok(e.app.Message)
	}
}

// agentIn matches an AgentEvent of terminal id of the given kind ("" any) and state ("" any).
func agentIn(id, kind string, state api.State) func(watchEvent) bool {
	return func(e watchEvent) bool {
		return e.agent != nil && e.agent.Agent.ID().String() == id && (kind == "" || e.agent.Kind == kind) &&
			(state == "" || e.agent.Agent.State == state)
	}
}

// The host side. On the hosts the app runs its tmux as the SSH user, krad, on a socket in a
// folder of its own, hostSocket; `docker exec` as krad reaches the same server there.

// hostSocket is the app's tmux socket on the hosts.
const hostSocket = "/home/krad/.krad-ade/tmux/krad-ade"

// hostTmux runs tmux -S hostSocket on h as krad.
func hostTmux(t *testing.T, h *e2e.Host, args ...string) string {
	t.Helper()
	return h.ExecAs(t, "krad", append([]string{"tmux", "-S", hostSocket}, args...)...)
}

// kradBin is the folder where the app installs krad on a host.
func kradBin() string { return "/home/krad/.krad-ade/bin/" + version.Build }

// term is a terminal of the app on a host: a window of the host's tmux, typed into with
// send-keys and read with capture-pane, as a person attached to it would.
type term struct {
	h      *e2e.Host
	id     string // E:N
	window string // the tmux window id, @N
	seq    int
}

// findTerminal waits for the window whose @krad_terminal is id in session env on h.
func findTerminal(t *testing.T, h *e2e.Host, env, id string, d time.Duration) *term {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		out := hostTmux(t, h, "list-windows", "-t", env, "-F", "#{window_id} #{@krad_terminal}")
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[1] == id {
				tm := &term{h: h, id: id, window: f[0]}
				tm.waitForShell(t, d)
				return tm
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("host %s: no window of session %s is terminal %s within %v: %q", h.Name, env, id, d, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// openTerminal opens a window in session env by hand, as a person would with prefix c, and
// waits for the app to number it.
func openTerminal(t *testing.T, h *e2e.Host, env string, d time.Duration) *term {
	t.Helper()
	w := strings.TrimSpace(hostTmux(t, h, "new-window", "-d", "-t", env+":", "-P", "-F", "#{window_id}"))
	deadline := time.Now().Add(d)
	for {
		id := strings.TrimSpace(hostTmux(t, h, "show-options", "-wqv", "-t", w, "@krad_terminal"))
		if id != "" {
			tm := &term{h: h, id: id, window: w}
			tm.waitForShell(t, d)
			return tm
		}
		if time.Now().After(deadline) {
			t.Fatalf("host %s: the app did not number window %s within %v", h.Name, w, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// openAttached opens a window the way a person does: attached with the command the app prints
// (ssh -t HOST 'tmux -S ~/.krad-ade/tmux/krad-ade attach -t ENV', OpenSSH's client on this
// machine with the user's ssh_config), then prefix c. It waits for the app to number the window. The person detaches
// when the test ends.
func openAttached(t *testing.T, u *user, h *e2e.Host, env string, d time.Duration) *term {
	t.Helper()
	clients := func() []string {
		return strings.Fields(hostTmux(t, h, "list-clients", "-t", env, "-F", "#{?client_control_mode,,#{client_name}}"))
	}
	before := map[string]bool{}
	for _, w := range strings.Fields(hostTmux(t, h, "list-windows", "-t", env, "-F", "#{window_id}")) {
		before[w] = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := u.ssh.Command(ctx, "-tt", env, "tmux -S ~/.krad-ade/tmux/krad-ade attach -t "+env)
	cmd.Env = append(cmd.Env, "TERM=xterm-256color")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var said apptest.Buffer
	cmd.Stdout, cmd.Stderr = &said, &said
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	deadline := time.Now().Add(d)
	for len(clients()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("ssh -tt %s 'tmux -S ~/.krad-ade/tmux/krad-ade attach -t %s': no client attached within %v; it said: %q", env, env, d, said.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := stdin.Write([]byte("\x02c")); err != nil { // C-b c
		t.Fatal(err)
	}
	for {
		for _, w := range strings.Fields(hostTmux(t, h, "list-windows", "-t", env, "-F", "#{window_id}")) {
			if before[w] {
				continue
			}
			if id := strings.TrimSpace(hostTmux(t, h, "show-options", "-wqv", "-t", w, "@krad_terminal")); id != "" {
				tm := &term{h: h, id: id, window: w}
				tm.waitForShell(t, d)
				return tm
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prefix c in an attached client on %s opened no window the app numbered within %v", h.Name, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitForShell waits until the terminal shows something: its shell's prompt.
func (tm *term) waitForShell(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for strings.TrimSpace(tm.screen(t)) == "" {
		if time.Now().After(deadline) {
			t.Fatalf("host %s: terminal %s shows nothing within %v", tm.h.Name, tm.id, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// screen is the terminal's whole text, its scrollback included, wrapped lines joined.
func (tm *term) screen(t *testing.T) string {
	t.Helper()
	return hostTmux(t, tm.h, "capture-pane", "-p", "-J", "-S", "-", "-t", tm.window)
}

// typeLine types line into the terminal and presses Enter.
func (tm *term) typeLine(t *testing.T, line string) {
	t.Helper()
	hostTmux(t, tm.h, "send-keys", "-t", tm.window, "-l", line)
	hostTmux(t, tm.h, "send-keys", "-t", tm.window, "Enter")
}

// run types cmd into the terminal's shell between two marker lines, waits for the second, and
// returns what was printed between them and cmd's exit code. The markers are typed split in two
// ("K""B1") so that the typed line itself never matches them.
func (tm *term) run(t *testing.T, cmd string, d time.Duration) (string, int) {
	t.Helper()
	tm.seq++
	begin, end := fmt.Sprintf("KB%d", tm.seq), fmt.Sprintf("KE%d rc=", tm.seq)
	tm.typeLine(t, fmt.Sprintf(`echo "K""B%d"; %s; echo "K""E%d rc=$?"`, tm.seq, cmd, tm.seq))
	deadline := time.Now().Add(d)
	for {
		screen := tm.screen(t)
		lines := strings.Split(screen, "\n")
		from := -1
		for i, l := range lines {
			l = strings.TrimRight(l, " ")
			if l == begin {
				from = i
			}
			if from >= 0 && i > from && strings.HasPrefix(l, end) {
				rc, err := strconv.Atoi(strings.TrimPrefix(l, end))
				if err != nil {
					t.Fatalf("host %s, terminal %s: %q: cannot read the exit code in %q", tm.h.Name, tm.id, cmd, l)
				}
				var out []string
				for _, o := range lines[from+1 : i] {
					out = append(out, strings.TrimRight(o, " "))
				}
				return strings.Join(out, "\n"), rc
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("host %s, terminal %s: %q did not finish within %v; the screen:\n%s", tm.h.Name, tm.id, cmd, d, screen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mustRun is run, failing the test unless cmd exits 0.
func (tm *term) mustRun(t *testing.T, cmd string) string {
	t.Helper()
	out, rc := tm.run(t, cmd, time.Minute)
	if rc != 0 {
		t.Fatalf("host %s, terminal %s: %q exited %d:\n%s", tm.h.Name, tm.id, cmd, rc, out)
	}
	return out
}

// tokenFiles lists the token files under krad's ~/.krad-ade/run on the host.
func tokenFiles(t *testing.T, h *e2e.Host) []string {
	t.Helper()
	return strings.Fields(h.Exec(t, "sh", "-c", "ls -d /home/krad/.krad-ade/run/*/token 2>/dev/null || true"))
}

// exists says whether path exists on the host.
func exists(t *testing.T, h *e2e.Host, path string) bool {
	t.Helper()
	return strings.TrimSpace(h.Exec(t, "sh", "-c", `if [ -e "$1" ]; then echo yes; else echo no; fi`, "sh", path)) == "yes"
}

// procScan is run by bash on a host with the token on its stdin: it lists the
// /proc/PID/cmdline and /proc/PID/environ files that hold the token, among those its user may
// read. The token is only ever in a variable of this bash, never in an argument or an exported
// variable, so no process started here carries it.
const procScan = `read -r tok
n=0
for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do
	s=$(tr '\0' ' ' <"$f" 2>/dev/null) || continue
	n=$((n+1))
	case $s in *"$tok"*) echo "holds: $f $(tr '\0' ' ' <"${f%/*}/cmdline" | cut -c1-80)";; esac
done
echo "scanned $n"`

// scanProcesses fails the test if a process on h has tok in its argv or environment. It scans
// as root and as each user: root in a container has no CAP_SYS_PTRACE, so it may not read the
// environment of another user's processes, which their own user may.
func scanProcesses(t *testing.T, h *e2e.Host, tok string) {
	t.Helper()
	counts := map[string]int{}
	for _, who := range []string{"root", "krad", "other"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := h.Command(ctx, who, "bash", "-c", procScan)
		cmd.Stdin = strings.NewReader(tok + "\n")
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("host %s: the /proc scan as %s: %v", h.Name, who, err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.HasPrefix(l, "holds: ") {
				t.Errorf("host %s: the token is in %s", h.Name, strings.TrimPrefix(l, "holds: "))
			}
			var n int
			if _, err := fmt.Sscanf(l, "scanned %d", &n); err == nil {
				counts[who] = n
			}
		}
	}
	if counts["root"] < 4 || counts["krad"] < 4 {
		t.Errorf("host %s: the /proc scan read too few files: %v", h.Name, counts)
	}
	t.Logf("host %s: the token is in none of the cmdline and environ files (read as root, krad, other: %d, %d, %d)",
		h.Name, counts["root"], counts["krad"], counts["other"])
}

// measured logs a figure for the report, with a prefix that -v output can be grepped for.
func measured(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("measured: "+format, args...)
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

var probeBuild struct {
	mu   sync.Mutex
	dir  string
	errs map[string]error // by GOARCH, once built
}

// probe is the path of the probe command (./probe), built static once per run: it runs on this
// machine and on the hosts.
func probe(t *testing.T) string {
	t.Helper()
	return probeFor(t, runtime.GOARCH)
}

// probeFor is probe built for linux/arch, for a host of that processor.
func probeFor(t *testing.T, arch string) string {
	t.Helper()
	probeBuild.mu.Lock()
	defer probeBuild.mu.Unlock()
	if probeBuild.dir == "" {
		dir, err := os.MkdirTemp("", "krad-e2e-probe-")
		if err != nil {
			t.Fatal(err)
		}
		probeBuild.dir, probeBuild.errs = dir, map[string]error{}
	}
	path := filepath.Join(probeBuild.dir, "probe-"+arch)
	err, done := probeBuild.errs[arch]
	if !done {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-tags", "e2e", "-trimpath", "-o", path,
			"github.com/krad-ade/krad/e2e/scenarios/probe")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		if out, berr := cmd.CombinedOutput(); berr != nil {
			err = fmt.Errorf("go build ./e2e/scenarios/probe for linux/%s: %w: %s", arch, berr, out)
		}
		probeBuild.errs[arch] = err
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func removeProbe() {
	if probeBuild.dir != "" {
		os.RemoveAll(probeBuild.dir)
	}
}

// hostProbe is the probe command for h's processor put on h, as /usr/local/bin/krad-e2e-probe.
func hostProbe(t *testing.T, h *e2e.Host) string {
	t.Helper()
	b, err := os.ReadFile(probeFor(t, h.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	const path = "/usr/local/bin/krad-e2e-probe"
	h.WriteFile(t, path, b, 0o755, "root")
	return path
}
