package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/krad-ade/krad/agenthooks"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/atomicfile"
	"github.com/krad-ade/krad/internal/fileowner"
)

// hookWait bounds all that `krad-ade-agents hook` does, from its start to its exit: reading
// what the agent sent and the report's round trip, as krad report and run bound theirs. A bus
// that hangs or is gone costs the agent this at most, and never an error: the agent waits for
// its hooks (Claude Code and Gemini CLI before they go on), and a late state is worth little.
var hookWait = reportWait

// agentsHookCommand is `krad-ade-agents hook KIND [EVENT] [JSON]`: an agent CLI's hook.
func agentsHookCommand() *command {
	return &command{
		name:    "hook",
		args:    "KIND [EVENT] [JSON]",
		summary: "an agent CLI's hook: tells krad-ade the state the agent is in (claude, codex, gemini)",
		raw:     true,
		help: `
Called by an agent's CLI at the points its hooks are installed for (krad-ade installs them in
the agents it starts whose [[agent]] profile has a kind; krad hooks --print-config KIND prints
them for an agent you start yourself). KIND is claude, codex or gemini; EVENT the hook's event
(Stop, Notification, …; none: the JSON's hook_event_name); the agent's JSON comes on stdin, or,
from Codex's notify program, as the last argument. It tells krad-ade the state the event means
(working, needs_input with the agent's message, idle), as krad report would, through the
KRAD_ADE_* variables of the terminal it runs in.

It never prints, never fails the agent (it exits 0 whatever happens), and returns within 2
seconds: outside krad-ade's terminals, or with no bus to answer, it tells no one. Called by
Codex's notify, it then runs the notify program of your Codex config, if it names one, as Codex
would have.`,
		run: func(x *invocation, args []string) error {
			x.hook(args)
			return nil
		},
	}
}

// hook is the hook's work; it returns when it is done, having printed nothing.
func (x *invocation) hook(args []string) {
	ctx, cancel := context.WithTimeout(x.ctx, hookWait)
	defer cancel()
	if len(args) == 0 || !agenthooks.Known(args[0]) {
		return
	}
	kind, event := args[0], ""
	if len(args) > 1 {
		event = args[1]
	}
	var js []byte
	if kind == agenthooks.Codex && event == agenthooks.NotifyEvent {
		if len(args) > 2 {
			js = []byte(args[len(args)-1])
		}
		defer x.chainCodexNotify(js)
	} else {
		js = readPayload(ctx, x.stdin)
	}
	body, ok := agenthooks.Read(kind, event, js)
	if !ok || x.env(varTerminal) == "" {
		return // nothing to tell, or no one to tell it: not one of krad-ade's terminals
	}
	b, err := fromVariables(x.env)
	if err != nil {
		return
	}
	_ = b.okWithin(ctx, api.NewRequest(api.Report, &body), time.Until(deadlineOf(ctx)))
}

// deadlineOf is ctx's deadline, which hook's context has.
func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// readPayload reads what the agent wrote on stdin, until its end or until ctx is done: the
// first agenthooks.MaxPayload bytes and one more (so that Read knows it was cut), the rest read
// and dropped, so that an agent writing a large payload is not left writing to no one. A
// terminal on stdin (the hook run by hand) is not read.
func readPayload(ctx context.Context, r io.Reader) []byte {
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err != nil || fi.Mode()&fs.ModeCharDevice != 0 {
			return nil
		}
	}
	if r == nil {
		return nil
	}
	read := make(chan []byte, 1)
	go func() {
		var b bytes.Buffer
		_, _ = io.Copy(&b, io.LimitReader(r, agenthooks.MaxPayload+1))
		_, _ = io.Copy(io.Discard, r)
		read <- b.Bytes()
	}()
	select {
	case b := <-read:
		return b
	case <-ctx.Done():
		return nil
	}
}

// chainCodexNotify runs the notify program of the person's Codex config (CODEX_HOME, else
// ~/.codex, config.toml) with js as its last argument, in place of the hook, as Codex would have
// without the app's -c notify. It returns only when there is none, or it cannot start.
func (x *invocation) chainCodexNotify(js []byte) {
	home := x.env("CODEX_HOME")
	if home == "" {
		if h := x.env("HOME"); h != "" {
			home = filepath.Join(h, ".codex")
		}
	}
	if home == "" {
		return
	}
	f, err := os.Open(filepath.Join(home, "config.toml"))
	if err != nil {
		return
	}
	config, err := io.ReadAll(io.LimitReader(f, 1<<20))
	f.Close()
	argv := agenthooks.CodexChain(config)
	if err != nil || argv == nil {
		return
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return
	}
	_ = syscall.Exec(path, append(argv, string(js)), os.Environ())
}

// agentsHooksFileCommand is `krad-ade-agents hooks-file gemini`, hidden: the shell words before
// a gemini profile's command run it (agenthooks.AgentArgs), and give Gemini CLI the file it
// prints as its system defaults.
func agentsHooksFileCommand() *command {
	return &command{
		name:    "hooks-file",
		args:    "gemini",
		summary: "write Gemini CLI's system defaults with krad-ade's hooks, and print where (for krad-ade)",
		hidden:  true,
		help: `
Writes the system defaults file Gemini CLI would read (GEMINI_CLI_SYSTEM_DEFAULTS_PATH, else the
system's own) with krad-ade's hooks added to it, as ~/.krad-ade/hooks/gemini-system-defaults.json
(owner-only), and prints its path. krad-ade starts an agent of kind gemini with
GEMINI_CLI_SYSTEM_DEFAULTS_PATH set to it: your own settings files are left as they are, and
their hooks run beside these.`,
		run: func(x *invocation, args []string) error {
			if len(args) != 1 || args[0] != agenthooks.Gemini {
				return x.usageError("%s takes one kind: gemini", x.path)
			}
			path, err := x.writeGeminiDefaults()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(x.stdout, path)
			return err
		},
	}
}

// geminiSystemDefaults is where Gemini CLI reads its system defaults when
// GEMINI_CLI_SYSTEM_DEFAULTS_PATH is not set
// (https://geminicli.com/docs/get-started/configuration/).
func geminiSystemDefaults() string {
	if runtime.GOOS == "darwin" {
		return "/Library/Application Support/GeminiCli/system-defaults.json"
	}
	return "/etc/gemini-cli/system-defaults.json"
}

// writeGeminiDefaults writes the system defaults file with the hooks, and returns its path.
func (x *invocation) writeGeminiDefaults() (string, error) {
	home := x.env("HOME")
	if home == "" {
		return "", errors.New("HOME is not set")
	}
	dir := filepath.Join(home, ".krad-ade", "hooks")
	if err := privateFolder(filepath.Dir(dir)); err != nil {
		return "", err
	}
	if err := privateFolder(dir); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "gemini-system-defaults.json")
	source := x.env(agenthooks.GeminiDefaultsVar)
	if source == "" || source == path {
		// Not the person's: the one the system has (a terminal started by krad-ade's gemini
		// names this file itself).
		source = geminiSystemDefaults()
	}
	var existing []byte
	if f, err := os.Open(source); err == nil {
		existing, err = io.ReadAll(io.LimitReader(f, 1<<20))
		f.Close()
		if err != nil {
			return "", fmt.Errorf("read %s: %w", source, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", source, err)
	}
	out, err := agenthooks.GeminiDefaults(existing)
	if err != nil {
		return "", fmt.Errorf("%s is not Gemini CLI settings: %w", source, err)
	}
	if err := atomicfile.WriteFile(path, out, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// privateFolder makes dir, owner-only, when it is missing, and refuses one that is a symlink, not
// a folder, another user's, or writable by others: the file in it names commands the agent runs.
func privateFolder(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	switch {
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a folder (a symlink?)", dir)
	case fileowner.Of(fi) >= 0 && fileowner.Of(fi) != os.Getuid():
		return fmt.Errorf("%s is another user's", dir)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is writable by others", dir)
	}
	return nil
}
