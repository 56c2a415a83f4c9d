package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/krad-ade/krad/api"
)

// How long and how often `krad-ade-agents shell` asks tmux for the window's number, and how
// krad-ade-agents replaces itself with another program (shell, run --exec); tests change them.
var (
	shellWait   = 5 * time.Second
	shellPoll   = 20 * time.Millisecond
	execProgram = syscall.Exec
)

// agentsShellCommand is `krad-ade-agents shell`, tmux's default-command in the app's tmux.
func agentsShellCommand() *command {
	return &command{
		name:    "shell",
		summary: "start the user's shell in a window opened by hand, once the app has numbered it",
		help: `
Starts the user's shell ($SHELL, else /bin/sh) in place of krad-ade-agents. It is the command of
the windows a person opens by hand in the app's tmux (prefix c), which the app did not create
and so could not give KRAD_ADE_TERMINAL.

When KRAD_ADE_TERMINAL is set, the shell starts at once. Otherwise krad-ade-agents asks tmux
(the server in TMUX) for the option @krad_terminal of its pane's window (TMUX_PANE), in which the
app writes the number it gives every window it sees ("main:5"), every 20 ms for up to 5 s, and
starts the shell with KRAD_ADE_TERMINAL set to it. If the number never comes, it says so in one
warning and starts the shell anyway.`,
		run: func(x *invocation, args []string) error {
			if err := x.noArgs(args); err != nil {
				return err
			}
			env := withOwnFolderFirst(os.Environ())
			if x.env(varTerminal) == "" {
				id, ok := windowTerminal(x.ctx, x.env, shellWait)
				if !ok {
					x.warn("the app did not number this window; krad commands here will not know their terminal")
				} else {
					env = setEnv(env, varTerminal, id)
				}
			}
			return x.startShell(env)
		},
	}
}

// windowTerminal is the terminal of the tmux window this process runs in, as the app wrote it in
// the window's @krad_terminal ("main:5"): the one rule by which krad-ade-agents shell and krad
// learn their terminal in a window the app did not open, and so could not give
// KRAD_ADE_TERMINAL. It asks only when the process runs in a tmux pane (TMUX names the server,
// TMUX_PANE the pane: without the pane, tmux would answer for whichever window is current), and
// asks again every shellPoll until the option holds a terminal or wait has passed (once when wait
// is 0).
func windowTerminal(ctx context.Context, env Env, wait time.Duration) (string, bool) {
	server, pane := env("TMUX"), env("TMUX_PANE")
	if server == "" || pane == "" {
		return "", false // not in tmux: no one will number this window
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(ctx, wait+time.Second) // a tmux that hangs is given up on
	defer cancel()
	deadline := time.Now().Add(wait)
	for {
		cmd := exec.CommandContext(ctx, tmux, "show-options", "-wqv", "-t", pane, api.WindowTerminalOption)
		cmd.Env = setEnv(os.Environ(), "TMUX", server)
		if out, err := cmd.Output(); err == nil {
			if id, err := api.ParseTerminalID(strings.TrimSpace(string(out))); err == nil {
				return id.String(), true
			}
		}
		if !time.Now().Before(deadline) {
			return "", false
		}
		select {
		case <-time.After(shellPoll):
		case <-ctx.Done():
			return "", false
		}
	}
}

// withOwnFolderFirst puts the folder of this executable (where krad lives too) first on PATH, as
// the app does in its terminals (api.PathFirst). A window opened from outside the app's tmux (tmux
// new-window run in another shell) gets that shell's PATH rather than the session's, which would
// leave krad out.
func withOwnFolderFirst(env []string) []string {
	exe, err := os.Executable()
	if err != nil {
		return env
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	return setEnv(env, "PATH", api.PathFirst(filepath.Dir(exe), path))
}

// startShell replaces krad-ade-agents with the user's shell, an interactive shell (not a login
// one: argv[0] is $SHELL as it is), or /bin/sh when that fails. It returns only when neither
// starts.
func (x *invocation) startShell(env []string) error {
	shell := x.env("SHELL")
	if shell == "" {
		shell = "/bin/sh"
	}
	err := execFile(shell, env)
	if err == nil {
		return nil // only a test's execProgram returns
	}
	if shell != "/bin/sh" {
		x.warn("cannot start SHELL=%s (%v); starting /bin/sh", quote(shell), err)
		if err = execFile("/bin/sh", env); err == nil {
			return nil
		}
	}
	return &exited{code: 127, err: fmt.Errorf("cannot start a shell: %w", err)}
}

// execFile replaces the process with the program name, found as a shell would. In a tmux pane,
// it first writes the name tmux will show for it in the pane's api.PaneShellOption, so that the
// app can tell the shell from a job it runs where it cannot see the processes (an SSH host).
func execFile(name string, env []string) error {
	path, err := exec.LookPath(name)
	if err != nil {
		return err
	}
	markShell(env, name)
	return execProgram(path, []string{name}, env)
}

// markShell writes, in the pane option api.PaneShellOption of the tmux pane this process runs in
// (TMUX and TMUX_PANE in env), the name tmux gives a process whose argv[0] is argv0 in
// #{pane_current_command}. It gives up quietly, within a second: without it the app only sees no
// jobs on an SSH host.
func markShell(env []string, argv0 string) {
	var server, pane string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TMUX="); ok {
			server = v
		} else if v, ok := strings.CutPrefix(kv, "TMUX_PANE="); ok {
			pane = v
		}
	}
	name := paneCommandName(argv0)
	tmux, err := exec.LookPath("tmux")
	if server == "" || pane == "" || name == "" || err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tmux, "set-option", "-p", "-t", pane, api.PaneShellOption, name)
	cmd.Env = env
	_ = cmd.Run()
}

// paneCommandName is the name tmux shows in #{pane_current_command} for a process whose argv[0]
// is argv0 (tmux's parse_window_name): quotes, a leading "exec ", spaces and dashes (a login
// shell's "-bash") dropped, cut at the first space, and a path's last element.
func paneCommandName(argv0 string) string {
	name := strings.TrimPrefix(argv0, `"`)
	name, _, _ = strings.Cut(name, `"`)
	name = strings.TrimPrefix(name, "exec ")
	name = strings.TrimLeft(name, " -")
	name, _, _ = strings.Cut(name, " ")
	if strings.HasPrefix(name, "/") {
		name = filepath.Base(name)
	}
	return name
}

// setEnv sets key=value in env, a list of key=value.
func setEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}
