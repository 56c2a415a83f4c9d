package app

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/remote/shell"
	"github.com/krad-ade/krad/tmux"
)

// TmuxConfig says how to reach an environment's tmux server.
type TmuxConfig struct {
	// Program is the tmux executable; empty means "tmux" from PATH.
	Program string
	// SocketName is the server's socket name (tmux -L); empty means "krad-ade". SocketPath, when
	// set, picks the server by path instead (tmux -S); tests use one in a temporary folder.
	SocketName string
	SocketPath string
	// ConfigFile is what a server the app starts reads (tmux -f): empty means the user's own
	// ~/.tmux.conf, so that people who attach get their key bindings.
	ConfigFile string
	// Env is the environment of tmux processes; terminals inherit the server's.
	Env []string
}

// SocketName is the tmux socket name of the app's server.
const SocketName = "krad-ade"

func (tc TmuxConfig) socket() (name, path string) {
	if tc.SocketPath != "" {
		return "", tc.SocketPath
	}
	if tc.SocketName != "" {
		return tc.SocketName, ""
	}
	return SocketName, ""
}

// attachHint is the command a person runs to see an environment's terminals.
func (tc TmuxConfig) attachHint(session string) string {
	name, path := tc.socket()
	if path != "" {
		return fmt.Sprintf("tmux -S %s attach -t %s", shell.Quote(path), session)
	}
	return fmt.Sprintf("tmux -L %s attach -t %s", name, session)
}

// attachTimeout bounds how long tmux may take to answer an attach.
const attachTimeout = 30 * time.Second

// attach starts a control client attached to session, creating the session (with a holder
// window, which the app closes once its first terminal is open) if it does not exist.
func (tc TmuxConfig) attach(ctx context.Context, session string, onNote func(*tmux.Client, tmux.Notification)) (*tmux.Client, error) {
	name, path := tc.socket()
	// A server that does not answer (stopped, say) must not hold the attach for good: the
	// environment's loop tries again.
	ctx, cancel := context.WithTimeoutCause(ctx, attachTimeout, fmt.Errorf("tmux did not answer within %s", attachTimeout))
	defer cancel()
	return tmux.Start(ctx, tmux.StartOptions{
		Program:        tc.Program,
		SocketName:     name,
		SocketPath:     path,
		ConfigFile:     tc.ConfigFile,
		Session:        session,
		WindowName:     HolderName,
		Command:        HolderCommand,
		Env:            tc.Env,
		OnNotification: onNote,
	})
}

// PreviousEndpoint is the bus address that the terminals of an earlier run of the app were given,
// if that run's tmux server still has environment env: a new run that listens there again is
// reached by those terminals, which then learn that their token is from the earlier run (their
// KRAD_ADE_TOKEN cannot change) instead of finding nothing at all. It is "" when there is none.
func PreviousEndpoint(ctx context.Context, tc TmuxConfig, env string) string {
	name, path := tc.socket()
	args := []string{"-L", name}
	if path != "" {
		args = []string{"-S", path}
	}
	program := tc.Program
	if program == "" {
		program = "tmux"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, append(args, "show-environment", "-t", env, api.VarEndpoint)...)
	cmd.Env = tc.Env
	out, err := cmd.Output()
	if err != nil {
		return "" // no server, no session, no variable: nothing to go back to
	}
	_, v, ok := strings.Cut(strings.TrimSpace(string(out)), "=")
	if !ok {
		return ""
	}
	return v
}
