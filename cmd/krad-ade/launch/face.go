package launch

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/x/term"

	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/config"
	"github.com/krad-ade/krad/ui"
)

// LogFileName is the UI's log file in the state folder: the lines the headless app writes to
// stderr.
const LogFileName = "krad-ade.log"

// onTerminal reports whether both in and out are terminals: then krad-ade shows its UI, unless
// --headless. Run's writers are not files in tests, which always get the log lines.
func onTerminal(in io.Reader, out io.Writer) bool {
	fi, ok := in.(*os.File)
	fo, ok2 := out.(*os.File)
	return ok && ok2 && term.IsTerminal(fi.Fd()) && term.IsTerminal(fo.Fd())
}

// stateDir is where krad-ade keeps its log in UI mode: $XDG_STATE_HOME/krad-ade, else
// ~/.local/state/krad-ade.
func stateDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "krad-ade"), nil
	}
	home := getenv("HOME")
	if !filepath.IsAbs(home) {
		return "", fmt.Errorf("neither XDG_STATE_HOME nor HOME is an absolute path, so the UI has no folder for its log")
	}
	return filepath.Join(home, ".local", "state", "krad-ade"), nil
}

// openLog opens the UI's log file for appending, owner-only, in an owner-only state folder.
func openLog(getenv func(string) string) (*os.File, error) {
	dir, err := stateDir(getenv)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("the log's folder: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, LogFileName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the log file: %w", err)
	}
	return f, nil
}

// face is the UI of a run on a terminal.
type face struct {
	in       *os.File
	out      *os.File
	stderr   io.Writer // the terminal's, for why the UI stopped
	lines    *ui.LogLines
	settings *ui.Settings
	file     *os.File
	err      error // why the UI stopped, if not by the person's q; read once it is done
}

// show runs the UI until the person quits or ctx is done; quit stops the app.
func (f *face) show(ctx context.Context, model *app.App, cfg config.Config, configPath string, reload chan<- struct{}, quit func()) <-chan struct{} {
	envs := []ui.Environment{{Name: app.Local}}
	for _, e := range cfg.Environments {
		envs = append(envs, ui.Environment{Name: e.Name, SSH: e.SSH})
	}
	opts := ui.Options{
		App:          model,
		Environments: envs,
		ConfigPath:   configPath,
		SetDiscovery: func(on bool) error {
			if err := config.SetDiscovery(configPath, on); err != nil {
				return err
			}
			select { // applied at once, not at the next look
			case reload <- struct{}{}:
			default:
			}
			return nil
		},
		Settings:  f.settings,
		Log:       f.lines,
		LogFile:   f.file.Name(),
		AttachEnv: attachEnv(os.Environ()),
		Prompts:   ui.NewPrompts(),
	}
	// git's prompts come to the person while the UI shows; once it is gone, they fail at once
	// with the hint, as headless.
	model.SetPrompter(opts.Prompts)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer quit()
		defer func() {
			model.SetPrompter(nil)
			opts.Prompts.Close()
		}()
		if err := ui.Run(ctx, opts, f.in, f.out, os.Environ()); err != nil {
			f.err = err
			fmt.Fprintf(f.lines, "krad-ade: the UI stopped: %v\n", err)
		}
	}()
	return done
}

// attachEnv is the environment of the attach command: the app's own, without TMUX, so that
// tmux attaches inside a tmux the app was started in.
func attachEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "TMUX=") && !strings.HasPrefix(kv, "TMUX_PANE=") {
			env = append(env, kv)
		}
	}
	return env
}
