package appmain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

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

// stateDir is where krad-ade keeps its log in UI mode on system goos: $XDG_STATE_HOME/krad-ade,
// else ~/.local/state/krad-ade, or on macOS ~/Library/Logs/krad-ade, where a Mac keeps the
// logs of a person's programs (Console.app lists them).
func stateDir(getenv func(string) string, goos string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "krad-ade"), nil
	}
	home := getenv("HOME")
	if !filepath.IsAbs(home) {
		return "", fmt.Errorf("neither XDG_STATE_HOME nor HOME is an absolute path, so the UI has no folder for its log")
	}
	if goos == "darwin" {
		return filepath.Join(home, "Library", "Logs", "krad-ade"), nil
	}
	return filepath.Join(home, ".local", "state", "krad-ade"), nil
}

// LogCap is the size of the log file past which it is rotated: it becomes krad-ade.log.1 (one
// generation, replacing the last), and a new krad-ade.log starts.
const LogCap = 10 << 20

// openLog opens the UI's log file for appending, owner-only, in an owner-only state folder,
// rotated at LogCap.
func openLog(getenv func(string) string) (*logFile, error) {
	dir, err := stateDir(getenv, runtime.GOOS)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("the log's folder: %w", err)
	}
	return openLogFile(filepath.Join(dir, LogFileName), LogCap)
}

// logFile is the log file, rotated when it would grow past its cap: at open, and before a write
// that would take it past. A write is one log line (slog writes each whole), so a rotation never
// cuts a line. A rotation that fails (the rename) leaves the lines going to the file as it is,
// and is tried again at the next write: no line is lost for it.
type logFile struct {
	path string
	cap  int64

	mu   sync.Mutex
	f    *os.File
	size int64
}

// openLogFile opens path for appending (rotated first if it has reached limit), mode 0600.
func openLogFile(path string, limit int64) (*logFile, error) {
	l := &logFile{path: path, cap: limit}
	if fi, err := os.Stat(path); err == nil && fi.Size() >= limit {
		if err := os.Rename(path, path+".1"); err != nil {
			return nil, fmt.Errorf("the log file: rotate: %w", err)
		}
	}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *logFile) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("the log file: %w", err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = f.Chmod(0o600) // owner-only, whatever an earlier file had
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("the log file: %w", err)
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Write appends one line, rotating the file first when the line would take it past its cap.
func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size > 0 && l.size+int64(len(p)) > l.cap {
		l.rotate()
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

// rotate moves the file to .1 and starts a new one; on a failure the old one stays open. A file
// already gone (removed by hand, or renamed by a rotation whose new file did not open) is
// started again.
func (l *logFile) rotate() {
	if err := os.Rename(l.path, l.path+".1"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return
	}
	old := l.f
	if err := l.open(); err != nil {
		// No new file: the lines go on to the old one, until the next try.
		l.size = 0
		return
	}
	old.Close()
}

// Name is the log file's path.
func (l *logFile) Name() string { return l.path }

// Close closes the file.
func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// face is the UI of a run on a terminal.
type face struct {
	in       *os.File
	out      *os.File
	stderr   io.Writer // the terminal's, for why the UI stopped
	lines    *ui.LogLines
	settings *ui.Settings
	file     *logFile
	err      error // why the UI stopped, if not by the person's q; read once it is done
}

// newFace is the UI of a run on the terminal of stdin and out, with its log file open.
func newFace(getenv func(string) string, out *os.File, stderr io.Writer) (*face, error) {
	file, err := openLog(getenv)
	if err != nil {
		return nil, err
	}
	return &face{in: os.Stdin, out: out, stderr: stderr, lines: ui.NewLogLines(), file: file}, nil
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
		SetNotify: func(on bool) error {
			if err := config.SetNotify(configPath, on); err != nil {
				return err
			}
			select {
			case reload <- struct{}{}:
			default:
			}
			return nil
		},
		Desktop:   ui.Desktop{Term: os.Getenv("TERM"), InTmux: os.Getenv("TMUX") != "", Send: ui.NotifySend()},
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

// gone waits until the UI that show started is gone, so that the terminal is given back before
// krad-ade says it stopped, then says so: how the terminals are reached, and where the log is. Its
// exit code is exitError when the UI stopped by itself (said on stderr), else exitOK.
func (f *face) gone(shown <-chan struct{}, model *app.App) int {
	<-shown
	code := exitOK
	if f.err != nil {
		code = fail(f.stderr, exitError, "the UI stopped: "+f.err.Error(), "run krad-ade --headless")
	}
	fmt.Fprintf(f.out, "krad-ade: stopped; the terminals keep running (%s); the log is in %s\n",
		model.AttachHint(app.Local), f.file.Name())
	return code
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
