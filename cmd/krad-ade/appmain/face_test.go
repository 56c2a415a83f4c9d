package appmain

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The log file is rotated when it would grow past its cap, at open and while the app writes:
// one generation (.1), owner-only, no line cut or lost between the two files.
func TestLogRotates(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, "krad-ade")
	path := filepath.Join(dir, LogFileName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// An earlier run's file at the cap, with a loose mode.
	old := strings.Repeat("an earlier run's line\n", 50)
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	const limit = 1000
	l, err := openLogFile(path, limit)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if b, _ := os.ReadFile(path + ".1"); string(b) != old {
		t.Errorf("at open, the full file was not rotated: .1 holds %d bytes", len(b))
	}
	line := func(i int) string { return fmt.Sprintf("line %03d %s\n", i, strings.Repeat("x", 90)) } // 100 bytes
	for i := 1; i <= 25; i++ {
		if _, err := fmt.Fprint(l, line(i)); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() > limit {
			t.Fatalf("after line %d the file is %v (%v), over the cap of %d", i, fi.Size(), err, limit)
		}
	}
	lines := func(from, to int) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			b.WriteString(line(i))
		}
		return b.String()
	}
	// 10 lines fill a file: lines 11–20 are in .1, 21–25 in the file.
	if b, _ := os.ReadFile(path); string(b) != lines(21, 25) {
		t.Errorf("the file holds:\n%s\nwant lines 21 to 25", b)
	}
	if b, _ := os.ReadFile(path + ".1"); string(b) != lines(11, 20) {
		t.Errorf(".1 holds:\n%s\nwant lines 11 to 20", b)
	}
	for _, p := range []string{path, path + ".1"} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", p, fi.Mode().Perm(), err)
		}
	}
	if m, _ := filepath.Glob(path + ".*"); len(m) != 1 {
		t.Errorf("generations kept: %v, want .1 only", m)
	}

	// Removed by hand while the app runs: the lines go to the removed file until it is full
	// (26–30), then a new file starts.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	for i := 26; i <= 36; i++ {
		fmt.Fprint(l, line(i))
	}
	if b, _ := os.ReadFile(path); string(b) != lines(31, 36) {
		t.Errorf("after the file was removed, it holds:\n%s\nwant lines 31 to 36", b)
	}
}

// openLog puts the file in the state folder ($XDG_STATE_HOME/krad-ade), made owner-only, and
// appends to what is there under the cap.
func TestOpenLog(t *testing.T) {
	state := t.TempDir()
	getenv := func(k string) string {
		if k == "XDG_STATE_HOME" {
			return state
		}
		return ""
	}
	for i := range 2 {
		l, err := openLog(getenv)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(l, "run %d\n", i)
		l.Close()
	}
	path := filepath.Join(state, "krad-ade", LogFileName)
	if b, _ := os.ReadFile(path); string(b) != "run 0\nrun 1\n" {
		t.Errorf("the log file holds %q", b)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the state folder's mode: %v (%v)", fi.Mode().Perm(), err)
	}
	if _, err := os.Stat(path + ".1"); err == nil {
		t.Error("a file under the cap was rotated")
	}
}

// TestStateDir: XDG_STATE_HOME when it is an absolute path, on every system; else
// ~/.local/state/krad-ade on Linux and ~/Library/Logs/krad-ade on macOS.
func TestStateDir(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	for _, tt := range []struct {
		name string
		vars map[string]string
		goos string
		want string
	}{
		{"Linux", map[string]string{"HOME": "/home/u"}, "linux", "/home/u/.local/state/krad-ade"},
		{"macOS", map[string]string{"HOME": "/Users/u"}, "darwin", "/Users/u/Library/Logs/krad-ade"},
		{"XDG_STATE_HOME on macOS", map[string]string{"HOME": "/Users/u", "XDG_STATE_HOME": "/Users/u/.state"}, "darwin", "/Users/u/.state/krad-ade"},
		{"a relative XDG_STATE_HOME is skipped", map[string]string{"HOME": "/Users/u", "XDG_STATE_HOME": "state"}, "darwin", "/Users/u/Library/Logs/krad-ade"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := stateDir(env(tt.vars), tt.goos); err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := stateDir(env(nil), "darwin"); err == nil {
		t.Error("no HOME nor XDG_STATE_HOME: no error")
	}
}
