package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/krad-ade/krad/api"
)

// The programs of a build folder.
const (
	appName    = "krad-ade"
	cliName    = "krad"
	agentsName = "krad-ade-agents"
)

// appStartTimeout bounds the wait for api.json; appStopTimeout the wait for the app to exit
// after SIGTERM, before it is killed.
const (
	appStartTimeout = 20 * time.Second
	appStopTimeout  = 10 * time.Second
)

// app is a krad-ade started for the run, with a config folder of its own.
type app struct {
	proc     *child
	env      []string
	home     string // XDG_CONFIG_HOME of the app, removed by stop
	apiJSON  string
	logPath  string
	endpoint string
	token    api.Token
	pid      int
	hello    []byte // its answer line to Hello, newline included
	build    string

	notes []string // odd things seen, for the report

	closeTTY func() // the pseudo-terminal of an app with its UI; nil for none
}

// findBin checks that dir holds the three programs of a build.
func findBin(dir string) error {
	for _, name := range []string{appName, cliName, agentsName} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("%s: %w (build the programs first; see BENCHMARKS.md)", name, err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("%s in %s is not an executable file", name, dir)
		}
	}
	return nil
}

// childEnv is env without the variables that would point a krad program at another bus or a
// tmux program at another server, with set added.
func childEnv(env []string, set ...string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "KRAD_ADE_") || name == "TMUX" || name == "TMUX_PANE" {
			continue
		}
		if slices.ContainsFunc(set, func(kv string) bool { return strings.HasPrefix(kv, name+"=") }) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, set...)
}

// startApp starts dir/krad-ade with a temporary config folder, waits for its api.json, and makes
// one Hello to learn its answer. The caller must call stop.
func startApp(ctx context.Context, dir string, env []string) (_ *app, err error) {
	return startAppOn(ctx, dir, env, false)
}

// startAppOn is startApp; with ui, the app runs on a pseudo-terminal of its own and shows its UI.
func startAppOn(ctx context.Context, dir string, env []string, ui bool) (_ *app, err error) {
	if err := findBin(dir); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("bin folder: %w", err)
	}
	home, err := os.MkdirTemp("", "krad-bench-")
	if err != nil {
		return nil, fmt.Errorf("make the app's config folder: %w", err)
	}
	a := &app{
		home:    home,
		apiJSON: filepath.Join(home, "krad-ade", "api.json"),
		logPath: filepath.Join(home, "krad-ade.log"),
	}
	defer func() {
		if err != nil {
			a.stop()
		}
	}()
	logf, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("make the app's log file: %w", err)
	}
	defer logf.Close()

	// The app runs its environments in a tmux server of its own name (tmux -L) in TMUX_TMPDIR;
	// a folder of the run's own keeps it away from the user's app and its terminals.
	tmuxDir := filepath.Join(home, "tmux")
	if err := os.Mkdir(tmuxDir, 0o700); err != nil {
		return nil, fmt.Errorf("make the app's tmux folder: %w", err)
	}
	cmd := exec.Command(filepath.Join(abs, appName))
	cmd.Dir = home
	// HOME too: the app writes its terminals' token file under ~/.krad-ade.
	a.env = childEnv(env,
		"HOME="+home,
		"TMUX_TMPDIR="+tmuxDir,
		"XDG_CONFIG_HOME="+home,
		"XDG_STATE_HOME="+filepath.Join(home, "state"),
		"XDG_DATA_HOME="+filepath.Join(home, "data"),
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"),
	)
	cmd.Env = a.env
	cmd.Stdout, cmd.Stderr = logf, logf
	if ui {
		cmd.Env = append(cmd.Env, "TERM=xterm-256color")
		tty, closeTTY, err := onTerminal(120, 40)
		if err != nil {
			return nil, err
		}
		a.closeTTY = closeTTY
		cmd.Stdin, cmd.Stdout = tty, tty
		cmd.SysProcAttr = terminalAttr()
	}
	if a.proc, err = startChild(cmd); err != nil {
		return nil, err
	}

	if err := a.readAPIJSON(ctx); err != nil {
		return nil, err
	}
	t, err := newTarget(appName, a.endpoint, a.token)
	if err != nil {
		return nil, err
	}
	_, line, err := newClient(10*time.Second).request(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("the first hello to %s: %w", appName, err)
	}
	a.hello = line
	var h struct {
		Hello api.HelloAnswer `json:"Hello"`
	}
	if err := json.Unmarshal(line, &h); err == nil {
		a.build = h.Hello.Build
		if h.Hello.PID != 0 && h.Hello.PID != a.proc.pid() {
			a.note("Hello answers pid %d, the app's process is %d", h.Hello.PID, a.proc.pid())
		}
	}
	return a, nil
}

// readAPIJSON waits for the app's api.json and reads the endpoint and the token from it.
func (a *app) readAPIJSON(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, appStartTimeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = a.parseAPIJSON(); last == nil {
			return nil
		}
		select {
		case <-a.proc.done:
			return fmt.Errorf("%s exited before it wrote a valid api.json (%v); its output:\n%s", appName, a.proc.err, a.logTail())
		case <-ctx.Done():
			if errors.Is(last, fs.ErrNotExist) {
				return fmt.Errorf("%s wrote no api.json within %s (does it find %s?); its output:\n%s", appName, appStartTimeout, agentsName, a.logTail())
			}
			return fmt.Errorf("read %s: %w", a.apiJSON, last)
		case <-tick.C:
		}
	}
}

func (a *app) parseAPIJSON() error {
	data, err := os.ReadFile(a.apiJSON)
	if err != nil {
		return err
	}
	var f struct {
		APIVersion int    `json:"api_version"`
		Endpoint   string `json:"endpoint"`
		Token      string `json:"token"`
		PID        int    `json:"pid"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("api.json is not valid JSON: %w", err) // the error quotes no content
	}
	if f.APIVersion != api.Version {
		return fmt.Errorf("api.json names api_version %d, want %d", f.APIVersion, api.Version)
	}
	if err := api.CheckEndpoint(f.Endpoint); err != nil {
		return fmt.Errorf("api.json endpoint: %w", err)
	}
	tok, err := api.ParseToken(f.Token)
	if err != nil {
		return fmt.Errorf("api.json token: %w", err)
	}
	a.endpoint, a.token, a.pid = f.Endpoint, tok, f.PID
	if a.pid != a.proc.pid() {
		a.note("api.json names pid %d, the app's process is %d", a.pid, a.proc.pid())
	}
	if fi, err := os.Stat(a.apiJSON); err == nil && fi.Mode().Perm() != 0o600 {
		a.note("api.json has mode %04o, want 0600", fi.Mode().Perm())
	}
	return nil
}

func (a *app) note(format string, args ...any) {
	a.notes = append(a.notes, fmt.Sprintf(format, args...))
}

// logTail is the end of the app's output, without the token.
func (a *app) logTail() string {
	data, err := os.ReadFile(a.logPath)
	if err != nil {
		return "(no output)"
	}
	if len(data) > 2048 {
		data = data[len(data)-2048:]
	}
	s := strings.TrimRight(redact(string(data), a.token), "\n")
	if s == "" {
		return "(no output)"
	}
	return s
}

// redact removes the token from s, should a program have printed it.
func redact(s string, tok api.Token) string {
	if tok.IsZero() {
		return s
	}
	return strings.ReplaceAll(s, tok.Reveal(), api.Redacted)
}

// stop sends SIGTERM, kills the app if it has not exited within appStopTimeout, notes an exit
// other than a clean one and an api.json left behind, and removes the config folder.
func (a *app) stop() {
	defer os.RemoveAll(a.home)
	if a.closeTTY != nil {
		defer a.closeTTY()
	}
	if a.proc == nil {
		return
	}
	defer a.killTmux()
	select {
	case <-a.proc.done:
		a.note("%s exited during the run (%s)", appName, exitText(a.proc.err))
		return
	default:
	}
	_ = a.proc.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.proc.done:
		if a.proc.err != nil {
			a.note("%s exited with %v after SIGTERM", appName, a.proc.err)
		}
	case <-time.After(appStopTimeout):
		_ = a.proc.cmd.Process.Kill()
		<-a.proc.done
		a.note("%s did not exit within %s of SIGTERM and was killed", appName, appStopTimeout)
		return
	}
	if _, err := os.Stat(a.apiJSON); err == nil {
		a.note("%s left its api.json behind after SIGTERM", appName)
	}
}

// killTmux ends the tmux servers the app started in the run's TMUX_TMPDIR. tmux keeps a server,
// and the app's terminals in it, running after its clients leave, which is what the app wants
// across its own restarts and not what a benchmark may leave behind.
func (a *app) killTmux() {
	socks, _ := filepath.Glob(filepath.Join(a.home, "tmux", "tmux-*", "*"))
	for _, sock := range socks {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		cmd := exec.CommandContext(ctx, "tmux", "-S", sock, "kill-server")
		cmd.Env = a.env
		_ = cmd.Run() // a server already gone is fine; one that is not cannot be helped here
		cancel()
	}
}

// exitText says how a process ended, for a note.
func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
