// Package screentest runs a program as a person runs it, on a terminal: a pane of a tmux server
// of the test's own (not one the program starts), typed into with send-keys and read with
// capture-pane. The UI tests of krad-ade (cmd/krad-ade) and the scenarios that answer a host's git
// prompt in the app's UI (e2e/scenarios) drive krad-ade so.
package screentest

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krad-ade/krad/internal/testbin"
	"github.com/krad-ade/krad/remote/shell"
)

// Patience is how long the screen may take to show what a test waits for: the machine is
// shared, so it is generous; what it measures is logged, not asserted.
const Patience = 60 * time.Second

// Screen is one pane, running the program Start started.
type Screen struct {
	t    testing.TB
	sock string // the test's tmux server

	mu   sync.Mutex
	seen strings.Builder // every screen read
}

// Start runs argv, with exactly the environment env (env -i), in a w×h pane of a tmux server
// whose socket is sock (a short path: it must fit in a Unix socket's address). After the program
// exits the pane stays, showing "NAME exited CODE" (NAME argv[0]'s base name), so that what it
// printed last can be read. The server is killed when the test ends.
func Start(t testing.TB, sock string, w, h int, env, argv []string) *Screen {
	t.Helper()
	testbin.Need(t, "tmux", "tmux")
	s := &Screen{t: t, sock: sock}
	words := []string{"env", "-i"}
	for _, kv := range env {
		words = append(words, shell.Quote(kv))
	}
	for _, a := range argv {
		words = append(words, shell.Quote(a))
	}
	line := strings.Join(words, " ") + "; echo " + shell.Quote(filepath.Base(argv[0])) + " exited $?; sleep 3600"
	t.Cleanup(func() { _ = s.Tmux("kill-server").Run() })
	if out, err := s.Tmux("-f", "/dev/null", "new-session", "-d", "-s", "ui", "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), line).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	return s
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
			s.t.Fatalf("the screen did not show %q within %s:\n%s", re, Patience, text)
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
			s.t.Fatalf("the screen still shows %q after %s:\n%s", text, Patience, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WantModesRestored checks that the pane is back to a plain terminal: the program left the
// alternate screen, showed the cursor, and turned off the mouse and the application keypad.
func (s *Screen) WantModesRestored() {
	s.t.Helper()
	out, err := s.Tmux("display-message", "-p", "-t", "ui", "#{alternate_on} #{cursor_flag} #{mouse_any_flag} #{keypad_flag}").Output()
	if err != nil {
		s.t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "0 1 0 0" {
		s.t.Errorf("the terminal's modes after the UI (alternate screen, cursor, mouse, keypad): got %q, want 0 1 0 0", got)
	}
}
