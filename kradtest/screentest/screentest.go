// Package screentest runs a program as a person runs it, on a terminal: a pane of a tmux server
// of the test's own (not one the program starts), typed into with send-keys and read with
// capture-pane. The UI tests of krad-ade (cmd/krad-ade) and the scenarios that answer a host's git
// prompt in the app's UI (e2e/scenarios) drive krad-ade so.
package screentest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/remote/shell"
)

// Patience is how long the screen may take to show what a test waits for: the machine is
// shared, so it is generous; what it measures is logged, not asserted.
const Patience = 60 * time.Second

// Screen is one pane, running the program Start started.
type Screen struct {
	t    testing.TB
	sock string // the test's tmux server
	name string // the program's command name, as the kernel has it (/proc/PID/stat)

	mu   sync.Mutex
	seen strings.Builder // every screen read
}

// An Option changes how Start runs the program.
type Option func(*options)

type options struct {
	dir  string
	stop bool
}

// In runs the program in the working folder dir (the test's own without it).
func In(dir string) Option { return func(o *options) { o.dir = dir } }

// StopAtCleanup has the test's end stop the program, should it still run, as a person's kill
// would (SIGTERM), and wait until it has exited (up to Patience) before the tmux server is
// killed: a program that writes its log or removes its files as it stops must be done before the
// test's folders go. Cleanups run last first, so the folders made before Start go after it.
func StopAtCleanup() Option { return func(o *options) { o.stop = true } }

// Start runs argv, with exactly the environment env (env -i), in a w×h pane of a tmux server
// whose socket is sock (a short path: it must fit in a Unix socket's address). After the program
// exits the pane stays, showing "NAME exited CODE" (NAME argv[0]'s base name), so that what it
// printed last can be read. The server is killed when the test ends.
func Start(t testing.TB, sock string, w, h int, env, argv []string, opts ...Option) *Screen {
	t.Helper()
	testbin.Need(t, "tmux", "tmux")
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	name := filepath.Base(argv[0])
	s := &Screen{t: t, sock: sock, name: name[:min(len(name), 15)]} // the kernel keeps 15 bytes
	words := []string{"env", "-i"}
	for _, kv := range env {
		words = append(words, shell.Quote(kv))
	}
	for _, a := range argv {
		words = append(words, shell.Quote(a))
	}
	line := strings.Join(words, " ") + "; echo " + shell.Quote(name) + " exited $?; sleep 3600"
	t.Cleanup(func() {
		if o.stop {
			s.stop()
		}
		_ = s.Tmux("kill-server").Run()
	})
	newSession := []string{"-f", "/dev/null", "new-session", "-d", "-s", "ui", "-x", strconv.Itoa(w), "-y", strconv.Itoa(h)}
	if o.dir != "" {
		newSession = append(newSession, "-c", o.dir)
	}
	if out, err := s.Tmux(append(newSession, line)...).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	return s
}

// stop sends SIGTERM to the program if it still runs, and waits until it has exited. The
// program is the child of the pane's shell (env execs it) that bears its name: once it has
// exited, that child is the pane's sleep.
func (s *Screen) stop() {
	out, err := s.Tmux("display-message", "-p", "-t", "ui", "#{pane_pid}").Output()
	if err != nil {
		return
	}
	shellPID, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || shellPID <= 0 {
		return
	}
	pid := s.childNamed(shellPID)
	if pid == 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(Patience); s.childNamed(shellPID) == pid && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
}

// childNamed is the pid of the running (not zombie) child of parent whose command name is the
// program's, or 0.
func (s *Screen) childNamed(parent int) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range dirs {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // gone meanwhile
		}
		// PID (COMM) STATE PPID ...: the name may hold spaces and parentheses, the rest not.
		stat := string(b)
		open, closing := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
		if open < 0 || closing < open {
			continue
		}
		rest := strings.Fields(stat[closing+1:])
		if len(rest) < 2 || stat[open+1:closing] != s.name || rest[0] == "Z" || rest[1] != strconv.Itoa(parent) {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(stat[:open]))
		if err == nil {
			return pid
		}
	}
	return 0
}

// Tmux is a tmux command on the test's server.
func (s *Screen) Tmux(args ...string) *exec.Cmd {
	return exec.Command("tmux", append([]string{"-S", s.sock}, args...)...)
}

// Capture is the pane's text; with escapes, its SGR sequences too.
func (s *Screen) Capture(escapes bool) string {
	args := []string{"capture-pane", "-p", "-t", "ui"}
	if escapes {
		args = append(args, "-e")
	}
	out, err := s.Tmux(args...).Output()
	if err != nil {
		s.t.Fatalf("capture-pane: %v", err)
	}
	return string(out)
}

// Keys sends keys as tmux names them ("Enter", "Escape", "C-c") or as text ("-l", text).
func (s *Screen) Keys(keys ...string) {
	s.t.Helper()
	if out, err := s.Tmux(append([]string{"send-keys", "-t", "ui"}, keys...)...).CombinedOutput(); err != nil {
		s.t.Fatalf("send-keys: %v: %s", err, out)
	}
}

// Seen is every screen the waits read, one after the other: what the person was shown.
func (s *Screen) Seen() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen.String()
}

func (s *Screen) read() string {
	text := s.Capture(false)
	s.mu.Lock()
	s.seen.WriteString(text)
	s.mu.Unlock()
	return text
}

// WaitFor waits until the screen matches re, and returns the screen and how long it took.
func (s *Screen) WaitFor(re string) (string, time.Duration) {
	s.t.Helper()
	rx := regexp.MustCompile(re)
	began := time.Now()
	for {
		text := s.read()
		if rx.MatchString(text) {
			return text, time.Since(began)
		}
		if time.Since(began) > Patience {
			s.t.Fatalf("the screen did not show %q within %s (%s):\n%s", re, Patience, s.TTYMode(), text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitGone waits until the screen no longer shows text.
func (s *Screen) WaitGone(text string) {
	s.t.Helper()
	began := time.Now()
	for {
		got := s.read()
		if !strings.Contains(got, text) {
			return
		}
		if time.Since(began) > Patience {
			s.t.Fatalf("the screen still shows %q after %s (%s):\n%s", text, Patience, s.TTYMode(), got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TTYMode says whether the pane's terminal reads line by line (icanon, as a shell leaves it) or
// key by key (-icanon, as a full-screen program sets it), and echoes: WaitFor and WaitGone put it
// in their failure's message, since keys that seem lost may wait in a terminal left in line mode.
func (s *Screen) TTYMode() string {
	out, err := s.Tmux("display-message", "-p", "-t", "ui", "#{pane_tty}").Output()
	if err != nil {
		return "no pane tty: " + err.Error()
	}
	tty := strings.TrimSpace(string(out))
	out, err = exec.Command("stty", "-a", "-F", tty).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("stty -F %s: %v", tty, err)
	}
	var modes []string
	for _, f := range strings.Fields(string(out)) {
		if strings.TrimPrefix(f, "-") == "icanon" || strings.TrimPrefix(f, "-") == "echo" {
			modes = append(modes, f)
		}
	}
	return "the pane's terminal: " + strings.Join(modes, " ")
}

// Modes are the pane's terminal modes as tmux has them: alternate screen, cursor shown, mouse,
// application keypad ("0 1 0 0" for a plain terminal).
func (s *Screen) Modes() string {
	s.t.Helper()
	out, err := s.Tmux("display-message", "-p", "-t", "ui", "#{alternate_on} #{cursor_flag} #{mouse_any_flag} #{keypad_flag}").Output()
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// WantModesRestored checks that the pane is back to a plain terminal: the program left the
// alternate screen, showed the cursor, and turned off the mouse and the application keypad.
func (s *Screen) WantModesRestored() {
	s.t.Helper()
	if got := s.Modes(); got != "0 1 0 0" {
		s.t.Errorf("the terminal's modes after the UI (alternate screen, cursor, mouse, keypad): got %q, want 0 1 0 0", got)
	}
}
