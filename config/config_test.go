package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		want     Config
		wantLine int    // with wantMsg: the error's line
		wantMsg  string // "" means no error; else a part of the message
	}{
		{"empty file", "", Default(), 0, ""},
		{"only comments", "# nothing yet\n\n", Default(), 0, ""},
		{"discovery off", "discovery = false\n", cfg(false), 0, ""},
		{"discovery on", "discovery = true # the default\n", cfg(true), 0, ""},
		{"byte order mark", "\ufeffdiscovery = false\n", cfg(false), 0, ""},
		{"unknown key", "# krad-ade\n\ndiscovry = false\n", Config{}, 3, `unknown key "discovry"`},
		{"key in another case", "Discovery = false\n", Config{}, 1, `unknown key "Discovery"`},
		{"unknown key after a good one", "discovery = false\nqiet = \"2s\"\n", Config{}, 2, `unknown key "qiet"`},
		{"terminal as one table", "discovery = true\n\n[terminal]\ncommand = \"sh\"\n", Config{}, 3, `[[terminal]] tables`},
		{"agent as one table", "\n[agent]\nname = \"a\"\n", Config{}, 2, `agent must be [[agent]] tables`},
		{"environment as a string", "environment = \"box\"\n", Config{}, 1, `environment must be [[environment]] tables`},
		{"extension as one table", "\n\n[extension]\nname = \"x\"\n", Config{}, 3, `extension must be [[extension]] tables`},
		{"setup as a number", "\nsetup = 1\n", Config{}, 2, `setup must be [[setup]] tables`},
		{"unknown array of tables", "\n[[environments]]\nname = \"x\"\n", Config{}, 2, `unknown key "environments"`},
		{"unknown dotted key", "\n\na.b.c = 1\n", Config{}, 3, `unknown key "a"`},
		{"long unknown key", strings.Repeat("k", 100) + " = 1\n", Config{}, 1, `unknown key "` + strings.Repeat("k", 40) + `…"`},
		{"string for a bool", "\ndiscovery = \"no\"\n", Config{}, 2, "discovery must be true or false"},
		{"number for a bool", "discovery = 0\n", Config{}, 1, "discovery must be true or false"},
		{"table for a bool", "[discovery]\nx = 1\n", Config{}, 1, "discovery must be true or false"},
		{"broken TOML", "discovery = false\ndiscovery =\n", Config{}, 2, ""},
		{"duplicate key", "discovery = false\ndiscovery = true\n", Config{}, 2, "key 'discovery' has already been defined"},
		{"control character", "discovery = \"\x1b[31m\"\n", Config{}, 1, "control characters"},
		{"unterminated string", "discovery = true\n\nx = \"abc\n", Config{}, 3, ""},
		// The TOML library counts a newline as soon as it reads one, so an error about an
		// unexpected newline came with the number of the line after it.
		{"table header without its bracket", "discovery = true\n[[terminal]\ntitle = \"x\"\n", Config{}, 2, "']'"},
		{"table name without its bracket", "\n\n[terminal\n\n", Config{}, 3, "']'"},
		{"sign without a number", "\nx = +\n\n", Config{}, 2, "expected a digit"},
		{"newline after a key", "\ndiscovery\n\n", Config{}, 2, "expected '.' or '='"},
		{"newline after the equals sign", "\ndiscovery = \n\n", Config{}, 2, "expected value"},
		{"control character in a multi-line string", "\nx = \"\"\"\nabc\n\x01\"\"\"\n", Config{}, 4, "control characters"},
		{"bad escape in a multi-line string", "\nx = \"\"\"\nabc\n\\q\"\"\"\n", Config{}, 4, "invalid escape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.data))
			if tt.wantLine == 0 && tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %+v, want %+v", got, tt.want)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got error %v (%T), want an *Error", err, err)
			}
			if ce.Line != tt.wantLine {
				t.Errorf("got line %d, want %d (%v)", ce.Line, tt.wantLine, err)
			}
			if !strings.Contains(ce.Msg, tt.wantMsg) {
				t.Errorf("got message %q, want it to contain %q", ce.Msg, tt.wantMsg)
			}
			if want := "config.toml line "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("got %q, want it to start with %q", err, want)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	_, err := Parse([]byte("# krad-ade\n\ndiscovry = false\n"))
	if got, want := err.Error(), `config.toml line 3: unknown key "discovry"`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	got, err := Load(filepath.Join(dir, FileName))
	if err != nil || !reflect.DeepEqual(got, Default()) {
		t.Errorf("missing file: got %+v, %v; want %+v, nil", got, err, Default())
	}

	path := filepath.Join(dir, FileName)
	write(t, path, "discovery = false\n")
	got, err = Load(path)
	if err != nil || !reflect.DeepEqual(got, cfg(false)) {
		t.Errorf("got %+v, %v; want discovery off", got, err)
	}

	write(t, path, "discovry = false\n")
	_, err = Load(path)
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 1 {
		t.Errorf("got %v, want an *Error on line 1", err)
	}

	if _, err := Load(dir); err == nil {
		t.Error("a folder: got no error, want one")
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	// Through a rename, as editors do, so the watcher never reads half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// watch runs Watch in the background and gives its reports on channels.
type watch struct {
	changes chan Config
	errs    chan error
	holds   chan []string
	reload  chan struct{}
	stop    func()
}

func startWatch(t *testing.T, path string, interval time.Duration, current Config) *watch {
	t.Helper()
	w := &watch{changes: make(chan Config, 10), errs: make(chan error, 10), holds: make(chan []string, 10), reload: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		WatchAll(ctx, path, interval, w.reload, current, Callbacks{
			Change:  func(c Config) { w.changes <- c },
			Error:   func(err error) { w.errs <- err },
			Holding: func(closes []string) { w.holds <- closes }})
	}()
	w.stop = func() { cancel(); wg.Wait() }
	t.Cleanup(w.stop)
	return w
}

const patience = 5 * time.Second

func (w *watch) wantChange(t *testing.T, want Config) {
	t.Helper()
	select {
	case got := <-w.changes:
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got change to %+v, want %+v", got, want)
		}
	case err := <-w.errs:
		t.Fatalf("got error %v, want change to %+v", err, want)
	case <-time.After(patience):
		t.Fatalf("got no change in %v, want one to %+v", patience, want)
	}
}

func (w *watch) wantError(t *testing.T, line int) {
	t.Helper()
	select {
	case err := <-w.errs:
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != line {
			t.Fatalf("got error %v, want an *Error on line %d", err, line)
		}
	case c := <-w.changes:
		t.Fatalf("got change to %+v, want an error", c)
	case <-time.After(patience):
		t.Fatalf("got no error in %v, want one", patience)
	}
}

// wantQuiet checks that nothing is reported over a few polls.
func (w *watch) wantQuiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case c := <-w.changes:
		t.Fatalf("got change to %+v, want none", c)
	case err := <-w.errs:
		t.Fatalf("got error %v, want none", err)
	case <-time.After(d):
	}
}

func TestWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	w := startWatch(t, path, 20*time.Millisecond, Default())

	write(t, path, "discovery = false\n")
	w.wantChange(t, cfg(false))

	write(t, path, "discovery = false\ndiscovery =\n")
	w.wantError(t, 2)
	w.wantQuiet(t, 200*time.Millisecond) // once, not every poll; and the config stays

	write(t, path, "discovery = true\n")
	w.wantChange(t, cfg(true))

	// Same size, same content but for one word: found by content, not by size or mtime.
	write(t, path, "discovery=false\n")
	w.wantChange(t, cfg(false))
	write(t, path, "discovery=true \n")
	w.wantChange(t, cfg(true))

	write(t, path, "discovery = false\n")
	w.wantChange(t, cfg(false))
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	w.wantChange(t, Default())
}

// A file written in place, as a shell's `>` or many editors write it (truncated, then written
// piece by piece), is judged once it is whole: the watcher reports neither the empty file (a
// config without the environments) nor the half-written one (an error), only the config the
// person wrote.
func TestWatchFileWrittenInPlace(t *testing.T) {
	// Given back after the watch has stopped (cleanups run last first), which reads it.
	t.Cleanup(func(d time.Duration) func() { return func() { settle = d } }(settle))
	settle = time.Second // longer than the pauses below, on however busy a machine
	path := filepath.Join(t.TempDir(), FileName)
	write(t, path, "discovery = false\n")
	w := startWatch(t, path, 5*time.Millisecond, cfg(false))
	inPlace := func(pieces ...string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range pieces {
			time.Sleep(30 * time.Millisecond) // a few polls see the file as it is now
			if _, err := f.WriteString(p); err != nil {
				t.Fatal(err)
			}
		}
	}

	inPlace("disc", "overy = false\n# the same config\n")
	w.wantQuiet(t, settle+300*time.Millisecond)

	inPlace("discovery", " = true\n")
	w.wantChange(t, cfg(true))
	w.wantQuiet(t, settle+300*time.Millisecond)
}

// A file truncated, then left empty past settle before its write (a writer held off on a busy
// machine, or an editor that saves in place) closes no SSH environment: the empty file, which
// says there are none, is held as a closing until the file has been left alone closeSettle, and
// the write comes first; only the config written is reported. A file that stays empty that long
// does close them: the person removed them.
func TestWatchTruncatedFileClosesNoEnvironment(t *testing.T) {
	// Given back after the watches have stopped (cleanups run last first). A minute: the test's
	// write comes well within it, however busy the machine.
	t.Cleanup(func(d time.Duration) func() { return func() { closeSettle = d } }(closeSettle))
	closeSettle = time.Minute
	path := filepath.Join(t.TempDir(), FileName)
	const build = "[[environment]]\nname = \"build\"\nssh = \"buildbox\"\n"
	write(t, path, build)
	was, err := Load(path)
	if err != nil || len(was.Environments) != 1 {
		t.Fatalf("Load: %+v, %v", was, err)
	}
	w := startWatch(t, path, 20*time.Millisecond, was)
	w.wantQuiet(t, 100*time.Millisecond)

	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	// The watcher has looked at the empty file past settle, and holds it.
	w.wantHolding(t, "build")
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("discovery = false\n" + build); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	want := was
	want.Discovery = false
	w.wantChange(t, want)
	w.stop()

	// Emptied for good: applied, once the file has been left alone closeSettle.
	closeSettle = 300 * time.Millisecond
	w = startWatch(t, path, 20*time.Millisecond, want)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	w.wantChange(t, Default())
}

func (w *watch) wantHolding(t *testing.T, names ...string) {
	t.Helper()
	select {
	case got := <-w.holds:
		if !reflect.DeepEqual(got, names) {
			t.Fatalf("held a closing of %v, want %v", got, names)
		}
	case c := <-w.changes:
		t.Fatalf("got change to %+v, want the closing of %v held", c, names)
	case err := <-w.errs:
		t.Fatalf("got error %v, want the closing of %v held", err, names)
	case <-time.After(patience):
		t.Fatalf("held nothing in %v, want the closing of %v", patience, names)
	}
}

func TestWatchBrokenThenSameConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	write(t, path, "discovery = false\n")
	w := startWatch(t, path, 20*time.Millisecond, cfg(false))
	w.wantQuiet(t, 100*time.Millisecond) // the file says what the caller has

	write(t, path, "discovry = true\n")
	w.wantError(t, 1)
	// Fixed back to what it was: nothing changed, so nothing to report.
	write(t, path, "# fixed\ndiscovery = false\n")
	w.wantQuiet(t, 200*time.Millisecond)
}

// A file fixed back to the last good config is reported as recovered (to WatchAll's Recovered),
// not as a change.
func TestWatchRecovered(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	write(t, path, "discovery = false\n")
	errs, recovered := make(chan error, 10), make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		WatchAll(ctx, path, 20*time.Millisecond, nil, cfg(false), Callbacks{
			Change:    func(c Config) { t.Errorf("a change to %+v", c) },
			Error:     func(err error) { errs <- err },
			Recovered: func() { recovered <- struct{}{} },
		})
	}()
	defer func() { cancel(); <-done }()
	write(t, path, "discovry = true\n")
	select {
	case <-errs:
	case <-time.After(patience):
		t.Fatal("no error for the broken file")
	}
	write(t, path, "# fixed\ndiscovery = false\n")
	select {
	case <-recovered:
	case <-time.After(patience):
		t.Fatal("no recovery for the fixed file")
	}
}

func TestWatchReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	w := startWatch(t, path, time.Hour, Default())

	write(t, path, "discovery = false\n")
	w.reload <- struct{}{}
	w.wantChange(t, cfg(false))

	write(t, path, "discovery = nope\n")
	w.reload <- struct{}{}
	w.wantError(t, 1)
	// A reload reports an error that persists again: the user asked.
	w.reload <- struct{}{}
	w.wantError(t, 1)
}

func TestWatchChecksAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	write(t, path, "discovery = false\n")
	// Changed between the caller's Load and Watch: found without waiting an hour.
	w := startWatch(t, path, time.Hour, Default())
	w.wantChange(t, cfg(false))
}

func TestWatchStops(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	reload := make(chan struct{})
	close(reload) // a closed reload channel must not spin
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		WatchAll(ctx, path, time.Hour, reload, Default(), Callbacks{})
		close(done)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("Watch did not return after its context was done")
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		"discovery = false\n",
		"[[setup]]\npath = \"~/a\"\nremote = \"h/x\"\ninclude = [\".env\"]\ncommand = \"npm ci\"\ntimeout = \"5m\"\nenvironment = \"main\"\n",
		"discovry = true\n",
		"discovery = \"no\"\n",
		"[discovery]\nx = 1\n",
		"a.b.c = 1\n[[t]]\nx = 1\n[[t]]\ny.z = [1, {a = 2}]\n",
		"x = \"\"\"\nline\n\"\"\"\ndiscovery = 2024-01-01T00:00:00Z\n",
		"discovery =\n",
		"\ufeff\x00",
		"[[extension]]\nname = \"t\"\ncommand = [\"t\"]\nenv = { A = \"b\" }\nenvironments = [\"*\"]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse(data)
		if err == nil {
			return
		}
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("got error %v (%T), want an *Error", err, err)
		}
		if ce.Line < 0 {
			t.Fatalf("got line %d, want >= 0", ce.Line)
		}
		if n := strings.Count(string(data), "\n") + 1; ce.Line > n {
			t.Fatalf("got line %d of a %d-line file", ce.Line, n)
		}
	})
}

// cfg is the default config with discovery set to d.
func cfg(d bool) Config {
	c := Default()
	c.Discovery = d
	return c
}

func TestParseTerminalsAndQuiet(t *testing.T) {
	data := "quiet = \"3s\"\n[[terminal]]\ntitle = \"claude\"\ncommand = \"claude\"\nlead = true\n\n[[terminal]]\ntitle = \"tests\"\ndir = \"/src\"\nenvironment = \"main\"\n"
	got, err := Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Discovery: true, Notify: true, Quiet: 3 * time.Second, Terminals: []Terminal{
		{Title: "claude", Command: "claude", Lead: true},
		{Title: "tests", Dir: "/src", Environment: "main"},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	agents := "[[agent]]\nname = \"claude\"\ncommand = \"claude --verbose\"\nkind = \"claude\"\n[[agent]]\nname = \"codex\"\ncommand = \"codex exec\"\nprompt = \"argument\"\n"
	if got, err := Parse([]byte(agents)); err != nil || !reflect.DeepEqual(got.Agents, []Agent{{Name: "claude", Command: "claude --verbose", Kind: "claude"}, {Name: "codex", Command: "codex exec", PromptArg: true}}) {
		t.Errorf("agents: got %+v, %v", got.Agents, err)
	}
	if got, err := Parse([]byte("worktrees = \"~/big/wt\"\n")); err != nil || got.Worktrees != "~/big/wt" {
		t.Errorf("worktrees: got %+v, %v", got, err)
	}
	// A terminal may run an agent profile, of a table before or after it.
	data = "[[terminal]]\nagent = \"claude\"\nlead = true\n" + agents
	if got, err := Parse([]byte(data)); err != nil || !reflect.DeepEqual(got.Terminals, []Terminal{{Agent: "claude", Lead: true}}) {
		t.Errorf("a terminal running an agent: got %+v, %v", got, err)
	}
	// A terminal may name an environment that a later table defines.
	data = "[[terminal]]\nenvironment = \"build\"\n[[environment]]\nname = \"build\"\nssh = \"h\"\n"
	if got, err := Parse([]byte(data)); err != nil || len(got.Terminals) != 1 || got.Terminals[0].Environment != "build" {
		t.Errorf("a terminal of a later [[environment]]: got %+v, %v", got, err)
	}
	for _, tt := range []struct {
		data string
		line int
		msg  string
	}{
		{"quiet = 5\n", 1, "quiet must be a duration"},
		{"[[agent]]\nname = \"Claude\"\ncommand = \"claude\"\n", 2, "agent name must be"},
		{"[[agent]]\nname = \"c\"\ncommand = \"c\"\n[[agent]]\nname = \"c\"\ncommand = \"d\"\n", 5, `a second [[agent]] named "c"`},
		{"[[agent]]\nname = \"c\"\n", 2, "an [[agent]] needs a name and a command"},
		{"[[agent]]\nname = \"c\"\ncommand = \"c\"\nprompt = \"stdin\"\n", 4, `agent prompt must be "typed" or "argument"`},
		{"[[agent]]\nname = \"c\"\ncmd = \"c\"\n", 3, `unknown key "cmd" in [[agent]]`},
		{"[[agent]]\nname = \"c\"\ncommand = \"c\"\nkind = \"aider\"\n", 4, `agent kind must be "claude", "codex" or "gemini"`},
		{"[[agent]]\nname = \"c\"\ncommand = \"c\"\nkind = 1\n", 4, `agent kind must be`},
		{"worktrees = \"relative/wt\"\n", 1, "worktrees must be a folder's absolute path"},
		{"\nworktrees = 3\n", 2, "worktrees must be a folder's absolute path"},
		{"\nquiet = \"1ms\"\n", 2, "quiet must be a duration"},
		{"[[terminal]]\ntitle = \"a\"\nlead = \"yes\"\n", 3, "lead must be true or false"},
		{"[[terminal]]\ntitle = \"a\"\n[[terminal]]\ntitle = \"b\"\n\ncolour = 1\n", 6, `unknown key "colour" in [[terminal]]`},
		{"[[terminal]]\ncommand = 7\n", 2, "command must be a string"},
		{"[[terminal]]\ncommand = \"x\"\ntitle = \"fix\\tbug\"\n", 3, "terminal title holds the control character U+0009 at byte 3"},
		{"[[terminal]]\ntitle = \"\\u001b[31mred\"\n", 2, "U+001B"},
		{"[[terminal]]\ntitle = \"" + strings.Repeat("x", 201) + "\"\n", 2, "title is longer than 200 bytes"},
		{"[[terminal]]\ntitle = \"a\"\nenvironment = \"buid\"\n\n[[environment]]\nname = \"build\"\nssh = \"h\"\n", 3,
			`terminal environment "buid" is not named by an [[environment]]: the environments are main and build`},
		{"[[environment]]\nname = \"build\"\nssh = \"h\"\n[[terminal]]\nenvironment = \"main \"\n", 5, `terminal environment "main "`},
		{"[[terminal]]\nenvironment = \"\"\n", 2, `terminal environment "" is not named by an [[environment]]: the only environment is main, this computer`},
		{"terminal = 1\n", 1, "[[terminal]] tables"},
		{"[[terminal]]\nagent = \"claude\"\n", 2, `terminal agent "claude" is not named by an [[agent]]: config.toml names no agents; add an [[agent]] table`},
		{"[[agent]]\nname = \"c\"\ncommand = \"c\"\n[[terminal]]\ntitle = \"a\"\nagent = \"claude\"\n", 6, `terminal agent "claude" is not named by an [[agent]]: the only agent is c`},
		{"[[agent]]\nname = \"c\"\ncommand = \"c\"\n[[agent]]\nname = \"d\"\ncommand = \"d\"\n[[terminal]]\nagent = \"e\"\n", 8, `the agents are c and d`},
		{"[[agent]]\nname = \"c\"\ncommand = \"c\"\n[[terminal]]\nagent = \"c\"\ncommand = \"sh\"\n", 6, "a [[terminal]] runs a command or an agent, not both"},
		{"[[terminal]]\nagent = 1\n", 2, "terminal agent must be a string"},
	} {
		_, err := Parse([]byte(tt.data))
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != tt.line || !strings.Contains(ce.Msg, tt.msg) {
			t.Errorf("Parse(%q) = %v, want line %d and %q", tt.data, err, tt.line, tt.msg)
		}
	}
}

// TestTitleErrors: a title config.toml cannot have is refused with api.CheckTitle's own reason,
// whole, and nothing after it that does not fit (a long title has no control characters to
// write it without).
func TestTitleErrors(t *testing.T) {
	for _, tt := range []struct{ data, want string }{
		{"[[terminal]]\ncommand = \"x\"\ntitle = \"fix\\tbug\"\n",
			"config.toml line 3: terminal title holds the control character U+0009 at byte 3 (a tab, a newline or an escape is not text): a title is one line of text"},
		{"[[terminal]]\ntitle = \"" + strings.Repeat("x", 201) + "\"\n", "config.toml line 2: terminal title is longer than 200 bytes"},
	} {
		_, err := Parse([]byte(tt.data))
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%.60q) = %v, want %q", tt.data, err, tt.want)
		}
	}
}

func TestParseEnvironments(t *testing.T) {
	data := "[[environment]]\nname = \"build\"\nssh = \"buildbox\"\ndir = \"~/src/app\"\n"
	got, err := Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Environment{{Name: "build", SSH: "buildbox", Dir: "~/src/app"}}; !reflect.DeepEqual(got.Environments, want) {
		t.Errorf("got %+v, want %+v", got.Environments, want)
	}
	for _, tt := range []struct {
		data string
		line int
		msg  string
	}{
		{"[[environment]]\nname = \"b\"\n", 2, "needs a name and an ssh host"},
		{"[[environment]]\nname = \"main\"\nssh = \"h\"\n", 2, "named twice"},
		{"[[environment]]\nname = \"a.b\"\nssh = \"h\"\n", 2, "must be 1 to 64"},
		{"[[environment]]\nname = \"b\"\nssh = \"h\"\nport = 22\n", 4, `unknown key "port"`},
		{"[[environment]]\nname = \"b\"\nssh = \"h\"\n[[environment]]\nname = \"b\"\nssh = \"i\"\n", 5, "named twice"},
	} {
		_, err := Parse([]byte(tt.data))
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != tt.line || !strings.Contains(ce.Msg, tt.msg) {
			t.Errorf("Parse(%q) = %v, want line %d and %q", tt.data, err, tt.line, tt.msg)
		}
	}
}

// TestParseExtensions: [[extension]] tables, and what is refused in them, by line.
func TestParseExtensions(t *testing.T) {
	data := "[[environment]]\nname = \"build\"\nssh = \"h\"\n[[extension]]\nname = \"tracker\"\ncommand = [\"tracker-mcp\", \"--stdio\"]\n" +
		"env = { TRACKER_PROFILE = \"work\" }\nenvironments = [\"main\", \"build\"]\n[[extension]]\nname = \"docs\"\ncommand = [\"docs-mcp\"]\n"
	got, err := Parse([]byte(data))
	want := []Extension{
		{Name: "tracker", Command: []string{"tracker-mcp", "--stdio"}, Env: map[string]string{"TRACKER_PROFILE": "work"}, Environments: []string{"main", "build"}},
		{Name: "docs", Command: []string{"docs-mcp"}},
	}
	if err != nil || !reflect.DeepEqual(got.Extensions, want) {
		t.Errorf("extensions: got %+v, %v; want %+v", got.Extensions, err, want)
	}
	for _, tt := range []struct {
		data string
		line int
		msg  string
	}{
		{"[[extension]]\nname = \"Tracker\"\ncommand = [\"t\"]\n", 2, "extension name must be"},
		{"[[extension]]\nname = \"t\"\ncommand = \"tracker-mcp --stdio\"\n", 3, "extension command must be the program and its arguments"},
		{"[[extension]]\nname = \"t\"\ncommand = []\n", 3, "extension command must be"},
		{"[[extension]]\nname = \"t\"\n", 2, "an [[extension]] needs a name and a command"},
		{"[[extension]]\nname = \"t\"\ncommand = [\"t\"]\n[[extension]]\nname = \"t\"\ncommand = [\"u\"]\n", 5, `a second [[extension]] named "t"`},
		{"[[extension]]\nname = \"t\"\ncommand = [\"t\"]\nenv = { \"A=B\" = \"c\" }\n", 4, `extension env: "A=B" must be a variable's name`},
		{"[[extension]]\nname = \"t\"\ncommand = [\"t\"]\nenv = { KRAD_ADE_TOKEN = \"c\" }\n", 4, "KRAD_ADE_* variables"},
		{"[[extension]]\nname = \"t\"\ncommand = [\"t\"]\nenv = { A = 1 }\n", 4, "extension env must be a table of strings"},
		{"[[extension]]\nname = \"t\"\ncommand = [\"t\"]\nenvironments = [\"buid\"]\n", 4, `extension environments: "buid" is not named by an [[environment]]`},
		{"[[extension]]\nname = \"t\"\ncommand = [\"t\"]\nenvironments = \"main\"\n", 4, "extension environments must be a list"},
		{"[[extension]]\nname = \"t\"\ncommand = [\"t\"]\nshell = true\n", 4, `unknown key "shell" in [[extension]]`},
	} {
		_, err := Parse([]byte(tt.data))
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != tt.line || !strings.Contains(ce.Msg, tt.msg) {
			t.Errorf("Parse(%q) = %v, want line %d and %q", tt.data, err, tt.line, tt.msg)
		}
	}
}

// TestEditorAndGit: [editor] command and ssh_command are argv lists; [git] ssh_askpass a bool;
// anything else is refused with its line.
func TestEditorAndGit(t *testing.T) {
	c, err := Parse([]byte("[editor]\ncommand = [\"code\", \"--goto\", \"{file}:{line}\"]\nssh_command = [\"code\", \"--remote\", \"ssh-remote+{host}\", \"{file}\"]\n[git]\nssh_askpass = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Editor.Command, " ") != "code --goto {file}:{line}" || len(c.Editor.SSHCommand) != 4 || !c.SSHAskpass {
		t.Errorf("got %+v", c)
	}
	for _, bad := range []string{
		"[editor]\ncommand = \"code\"\n",
		"[editor]\ncommand = []\n",
		"[editor]\nedit = [\"vi\"]\n",
		"editor = 1\n",
		"[git]\nssh_askpass = \"yes\"\n",
		"[git]\naskpass = true\n",
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) took it", bad)
		}
	}
}
