package tmux

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// These tests run the real tmux: each starts a server of its own on a socket in a temporary
// folder, with no configuration file, and kills it at the end.

// server is a tmux server started for one test, and a client attached to its session "test".
type server struct {
	t      testing.TB
	tmux   string // the tmux executable
	socket string
	c      *Client
	notes  *recorder
}

func tmuxPath(t testing.TB) string {
	t.Helper()
	return testbin.Need(t, "tmux", "tmux")
}

// socketDir returns a folder for a socket: t.TempDir() unless its path is too long for one.
func socketDir(t testing.TB) string {
	dir := t.TempDir()
	if len(dir) < 80 {
		return dir
	}
	dir, err := os.MkdirTemp("", "tmux")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func testEnv() []string {
	// A plain shell in every window, whatever the user's.
	return append(os.Environ(), "SHELL=/bin/sh")
}

func startServer(t testing.TB) *server {
	t.Helper()
	s := &server{t: t, tmux: tmuxPath(t), socket: filepath.Join(socketDir(t), "s"), notes: &recorder{changed: make(chan struct{}, 1)}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Start(ctx, StartOptions{
		Program:        s.tmux,
		SocketPath:     s.socket,
		ConfigFile:     "/dev/null",
		Session:        "test",
		Env:            testEnv(),
		OnNotification: s.notes.add,
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	s.c = c
	t.Cleanup(func() {
		s.c.Close()
		exec.Command(s.tmux, "-S", s.socket, "kill-server").Run()
	})
	return s
}

// run runs a command through the client and fails the test if tmux rejects it.
func (s *server) run(args ...string) []string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := s.c.Command(ctx, args...)
	if err != nil {
		s.t.Fatalf("%q: %v", args, err)
	}
	return out
}

// outside runs the tmux command line on the test's server, as another client would.
func (s *server) outside(args ...string) {
	s.t.Helper()
	out, err := exec.Command(s.tmux, append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %q: %v: %s", args, err, out)
	}
}

// newWindow opens a window in the background running shellCommand and returns its IDs.
func (s *server) newWindow(shellCommand string) (WindowID, PaneID) {
	s.t.Helper()
	out := s.run("new-window", "-d", "-P", "-F", "#{window_id} #{pane_id}", "--", shellCommand)
	if len(out) != 1 {
		s.t.Fatalf("new-window printed %q, want one line", out)
	}
	w, p, _ := strings.Cut(out[0], " ")
	window, err := ParseWindowID(w)
	if err != nil {
		s.t.Fatal(err)
	}
	pane, err := ParsePaneID(p)
	if err != nil {
		s.t.Fatal(err)
	}
	return window, pane
}

// recorder keeps every notification, for tests to wait for the ones they expect.
type recorder struct {
	mu      sync.Mutex
	notes   []Notification
	changed chan struct{}
}

func (r *recorder) add(_ *Client, n Notification) {
	r.mu.Lock()
	r.notes = append(r.notes, n)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until the notifications so far satisfy ok.
func (r *recorder) waitFor(t *testing.T, what string, ok func([]Notification) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		done := ok(r.notes)
		r.mu.Unlock()
		if done {
			return
		}
		select {
		case <-r.changed:
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("no %s in %d notifications: %#v", what, len(r.notes), r.notes)
		}
	}
}

func TestTmuxCommand(t *testing.T) {
	s := startServer(t)
	if got, want := s.run("display-message", "-p", "#{session_name}"), []string{"test"}; !reflect.DeepEqual(got, want) {
		t.Errorf("display -p '#{session_name}': got %q, want %q", got, want)
	}
	if got := s.run("refresh-client"); got == nil || len(got) != 0 {
		t.Errorf("refresh-client: got %#v, want an empty reply", got)
	}
	// The new-session of the command line answers first, as a reply that is not ours.
	s.notes.waitFor(t, "reply to new-session and session-changed", func(notes []Notification) bool {
		return len(notes) >= 2 && reflect.DeepEqual(notes[0], UnsolicitedReply{}) && slicesContain(notes, SessionChanged{Session: 0, Name: "test"})
	})
}

func slicesContain(notes []Notification, want Notification) bool {
	for _, n := range notes {
		if reflect.DeepEqual(n, want) {
			return true
		}
	}
	return false
}

func TestTmuxCommandError(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus-command"}, "parse error: unknown command: bogus-command"},
		{[]string{"kill-window", "-t", "@999"}, "can't find window: @999"},
	} {
		_, err := s.c.Command(ctx, tt.args...)
		var ce *CommandError
		if !errors.As(err, &ce) || !reflect.DeepEqual(ce.Lines, []string{tt.want}) {
			t.Errorf("%q: got %v, want a *CommandError with %q", tt.args, err, tt.want)
		}
	}
	// The client goes on after an error.
	if got := s.run("display", "-p", "still here"); !reflect.DeepEqual(got, []string{"still here"}) {
		t.Errorf("after the errors: got %q", got)
	}
}

// hostile are arguments that tmux's parser would read something into if Quote let it.
var hostile = []string{
	``,
	`plain`,
	`-t`,
	`--`,
	`two  spaces `,
	`"double" 'single' "unbalanced`,
	`back\slash \\ \n \e \001 \u0041 trailing\`,
	`$HOME ${HOME} $ $$ $1`,
	`~ ~/x ~root`,
	`#{session_name} #{pane_id} ## # not a comment`,
	`a;b ; ;`,
	`{ } {`,
	`%if 1 %endif`,
	`x=y`,
	"new\nline\n",
	"\ttab\rcr",
	"\x1b[31mred\x1b[0m",
	"\x01\x02\x7f",
	"café ✓ 日本",
	"invalid \xff\xfe\xc3",
}

// Every hostile string arrives as one argument, byte for byte: stored with set-option (which does
// not expand formats) and read back with show-options -v.
func TestTmuxQuoteRoundTrip(t *testing.T) {
	s := startServer(t)
	for _, value := range hostile {
		s.run("set-option", "-g", "@krad-test", value)
		got := strings.Join(s.run("show-options", "-gv", "@krad-test"), "\n")
		if got != value {
			t.Errorf("set-option %q: show-options gave back %q", value, got)
		}
	}
}

// Text typed into a pane with send-keys -l arrives as it was: the pane runs cat, whose terminal
// echoes it, and capture-pane reads the screen.
func TestTmuxSendKeysLiteral(t *testing.T) {
	s := startServer(t)
	for _, text := range []string{
		`"double" 'single' back\slash`,
		`$HOME ${HOME} ~ ~/x`,
		`#{session_name} ## #`,
		`a;b ; { } %if`,
		`-t café ✓`,
	} {
		_, pane := s.newWindow("cat")
		// "--" ends the flags: without it tmux would read a text starting with '-' as flags.
		s.run("send-keys", "-t", pane.String(), "-l", "--", text)
		deadline := time.Now().Add(10 * time.Second)
		for {
			screen := s.run("capture-pane", "-p", "-t", pane.String())
			if len(screen) > 0 && strings.TrimRight(screen[0], " ") == text {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("send-keys -l %q: the pane shows %q", text, screen)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestTmuxNewWindow(t *testing.T) {
	s := startServer(t)
	window, pane := s.newWindow("sleep 60")
	s.notes.waitFor(t, "window-add for "+window.String(), func(notes []Notification) bool {
		return slicesContain(notes, WindowAdd{Window: window})
	})
	if got := s.run("display", "-p", "-t", pane.String(), "#{window_id}"); !reflect.DeepEqual(got, []string{window.String()}) {
		t.Errorf("the pane's window: got %q, want %s", got, window)
	}
	s.run("kill-window", "-t", window.String())
	// kill-window unlinks the window from the session before it closes, so tmux 3.3 calls it
	// %unlinked-window-close.
	s.notes.waitFor(t, "window-close for "+window.String(), func(notes []Notification) bool {
		return slicesContain(notes, WindowClose{Window: window}) || slicesContain(notes, WindowClose{Window: window, Unlinked: true})
	})
}

func TestTmuxOutput(t *testing.T) {
	s := startServer(t)
	_, pane := s.newWindow(`printf 'a\tb\\n'; sleep 60`)
	want := []byte("a\tb\\n")
	s.notes.waitFor(t, "output of "+pane.String(), func(notes []Notification) bool {
		var data []byte
		for _, n := range notes {
			if o, ok := n.(Output); ok && o.Pane == pane {
				data = append(data, o.Data...)
			}
		}
		return bytes.Equal(data, want)
	})
}

// A pane whose process exits stays, with remain-on-exit, and tells its exit status; a
// subscription reports the death without polling.
func TestTmuxPaneDeath(t *testing.T) {
	s := startServer(t)
	window, pane := s.newWindow("read line; exit 3")
	s.run("set-option", "-w", "-t", window.String(), "remain-on-exit", "on")
	s.run("refresh-client", "-B", "dead:%*:#{pane_dead} #{pane_dead_status}")
	if got := s.run("display", "-p", "-t", pane.String(), "#{pane_dead} #{pane_dead_status}"); !reflect.DeepEqual(got, []string{"0 "}) {
		t.Errorf("before the exit: got %q, want [\"0 \"]", got)
	}
	s.run("send-keys", "-t", pane.String(), "Enter")

	deadValue := func(notes []Notification) string {
		value := ""
		for _, n := range notes {
			if sc, ok := n.(SubscriptionChanged); ok && sc.Name == "dead" && sc.Pane == pane && strings.HasPrefix(sc.Value, "1 ") {
				value = sc.Value
			}
		}
		return value
	}
	s.notes.waitFor(t, "subscription-changed with the pane dead", func(notes []Notification) bool {
		return deadValue(notes) != ""
	})
	s.notes.mu.Lock()
	unreaped := deadValue(s.notes.notes) == "1 "
	s.notes.mu.Unlock()
	if unreaped {
		// tmux built with libutempter (Debian's is) can miss the SIGCHLD of a pane's process
		// and leave the pane dead with no status until another child of tmux ends: a format
		// job that ends at once is one. The app does the same (app.collect).
		s.run("display-message", "-p", "#(true)")
	}
	s.notes.waitFor(t, "subscription-changed with the pane dead and its status", func(notes []Notification) bool {
		for _, n := range notes {
			if sc, ok := n.(SubscriptionChanged); ok && sc.Name == "dead" && sc.Pane == pane && sc.Value == "1 3" {
				if sc.Window != window || sc.WindowIndex < 0 || sc.Session != 0 {
					t.Errorf("subscription-changed %#v: want window %s, an index and session $0", sc, window)
				}
				return true
			}
		}
		return false
	})
	if got := s.run("display", "-p", "-t", pane.String(), "#{pane_dead} #{pane_dead_status}"); !reflect.DeepEqual(got, []string{"1 3"}) {
		t.Errorf("after exit 3: got %q, want [\"1 3\"]", got)
	}
}

func TestTmuxKillServer(t *testing.T) {
	s := startServer(t)
	s.outside("kill-server")
	select {
	case <-s.c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done is not closed after kill-server")
	}
	var exit *ExitError
	if err := s.c.Err(); !errors.As(err, &exit) {
		t.Fatalf("Err() = %v (%T), want an *ExitError", err, err)
	}
	s.notes.waitFor(t, "exit", func(notes []Notification) bool {
		_, ok := notes[len(notes)-1].(Exit)
		return ok
	})
	_, err := s.c.Command(context.Background(), "display", "-p", "x")
	if !errors.Is(err, ErrClosed) || !errors.As(err, &exit) {
		t.Errorf("Command after kill-server: got %v, want ErrClosed and the *ExitError", err)
	}
}

func TestTmuxConcurrentCommands(t *testing.T) {
	s := startServer(t)
	const n = 100
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := "reply " + strconv.Itoa(i) + " #{session_name}"
			// -p expands formats; ## is a literal #, so the reply is the text as it was.
			got, err := s.c.Command(context.Background(), "display", "-p", strings.ReplaceAll(want, "#", "##"))
			if err != nil || !reflect.DeepEqual(got, []string{want}) {
				t.Errorf("command %d: got %q, %v; want [%q]", i, got, err, want)
			}
		}()
	}
	wg.Wait()
}

// A command whose ctx ends while tmux holds it back does not take the next command's reply.
func TestTmuxCancelledCommand(t *testing.T) {
	s := startServer(t)
	// wait-for is answered at once, but holds every later command of the client until the
	// channel is signalled.
	s.run("wait-for", "krad-test")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if got, err := s.c.Command(ctx, "display", "-p", "held"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a command behind wait-for: got %q, %v; want context.DeadlineExceeded", got, err)
	}
	next := make(chan result, 1)
	go func() {
		lines, err := s.c.Command(context.Background(), "display", "-p", "next")
		next <- result{lines, err}
	}()
	time.Sleep(100 * time.Millisecond)
	s.outside("wait-for", "-S", "krad-test")
	if r := wait(t, next); r.err != nil || !reflect.DeepEqual(r.lines, []string{"next"}) {
		t.Errorf("the command after the cancelled one: got %q, %v; want [next]", r.lines, r.err)
	}
}

// A session Start creates gets the first window asked for; arguments ending in ';', which tmux's
// command line reads as the end of a command, arrive whole.
func TestTmuxStartFirstWindow(t *testing.T) {
	tmux := tmuxPath(t)
	socket := filepath.Join(socketDir(t), "s")
	notes := &recorder{changed: make(chan struct{}, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Start(ctx, StartOptions{
		Program:        tmux,
		SocketPath:     socket,
		ConfigFile:     "/dev/null",
		Session:        "env;",
		WindowName:     "first;",
		Command:        []string{"sh", "-c", "echo ready; sleep 60;"},
		Env:            testEnv(),
		OnNotification: notes.add,
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		exec.Command(tmux, "-S", socket, "kill-server").Run()
	})
	got, err := c.Command(ctx, "list-windows", "-F", "#{session_name}|#{window_name}|#{pane_dead}")
	if want := []string{"env;|first;|0"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("list-windows: got %q, %v; want %q", got, err, want)
	}
	notes.waitFor(t, "the first window's output", func(notes []Notification) bool {
		for _, n := range notes {
			if o, ok := n.(Output); ok && bytes.Contains(o.Data, []byte("ready")) {
				return true
			}
		}
		return false
	})
}

// Start on a session that exists attaches to it; failures say why.
func TestTmuxStart(t *testing.T) {
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	second, err := Start(ctx, StartOptions{Program: s.tmux, SocketPath: s.socket, Session: "test", Env: testEnv()})
	if err != nil {
		t.Fatalf("Start on an existing session: %v", err)
	}
	if got, err := second.Command(ctx, "list-sessions", "-F", "#{session_name}"); err != nil || !reflect.DeepEqual(got, []string{"test"}) {
		t.Errorf("list-sessions: got %q, %v; want only the one session", got, err)
	}
	if err := second.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := second.Err(); err != ErrClosed {
		t.Errorf("Err() after Close = %v, want ErrClosed", err)
	}
	// The first client is unaffected.
	s.run("display", "-p", "x")

	for _, tt := range []struct {
		name string
		opts StartOptions
		want string
	}{
		{"no socket", StartOptions{Program: s.tmux, Session: "x"}, "set SocketName or SocketPath"},
		{"two sockets", StartOptions{Program: s.tmux, SocketName: "a", SocketPath: "/b", Session: "x"}, "not both"},
		{"bad session name", StartOptions{Program: s.tmux, SocketPath: s.socket, Session: "a:b"}, "session name"},
		{"no program", StartOptions{Program: filepath.Join(t.TempDir(), "no-tmux"), SocketPath: s.socket, Session: "x"}, "no such file"},
		{"width too large", StartOptions{Program: s.tmux, SocketPath: filepath.Join(socketDir(t), "s"), Session: "x", ConfigFile: "/dev/null", Width: 100000}, "new-session: tmux: width too large"},
		{"socket folder missing", StartOptions{Program: s.tmux, SocketPath: filepath.Join(t.TempDir(), "missing", "s"), Session: "x", ConfigFile: "/dev/null"}, "server exited unexpectedly"},
	} {
		c, err := Start(ctx, tt.opts)
		if err == nil {
			c.Close()
			t.Errorf("%s: Start succeeded, want an error", tt.name)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got error %q, want it to mention %q", tt.name, err, tt.want)
		}
	}
}

// formatHostile are texts that tmux would expand if they reached a format unescaped: commands,
// variables, short names, styles, times.
var formatHostile = []string{
	`fix #(touch RAN) bug`,
	`#{KRAD_ADE_TOKEN} #{pid} #{session_name}`,
	`#S #H #W #D #P #T #F #I #h #, #} #`,
	`## ### #### a#`,
	`#[fg=red]red ##[bold] ###[x] #[#{pid}] #(#(touch RAN))`,
	`%H:%M %% %s`,
	`#{?#{pid},#(touch RAN),no}`,
	`#{E:@x} #{T:@x} #{s/a/b/:pid}`,
}

// checkNotRun fails the test if a #(touch RAN) ran: tmux runs format jobs in the server's
// folder, which the tests' servers inherit from the test (the package folder), or in the pane's.
func checkNotRun(t *testing.T, dirs ...string) {
	t.Helper()
	time.Sleep(300 * time.Millisecond) // jobs run in the background
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "RAN")); err == nil {
			os.Remove(filepath.Join(d, "RAN"))
			t.Errorf("a #(…) in a text ran: %s holds RAN", d)
		}
	}
}

// Texts given through FormatLiteral come out of tmux's format expansion as they went in, for each
// kind of argument the app gives text in: set-option -F (the same expansion as -n), new-window -n
// and -c, and nothing in them runs.
func TestTmuxFormatLiteral(t *testing.T) {
	s := startServer(t)
	cwd, _ := os.Getwd()
	dirs := t.TempDir()
	for _, text := range append(append([]string{}, hostile...), formatHostile...) {
		s.run("set-option", "-F", "-g", "@krad-test", FormatLiteral(text))
		if got := strings.Join(s.run("show-options", "-gv", "@krad-test"), "\n"); got != text {
			t.Errorf("set-option -F %q: tmux made it %q", text, got)
		}
		if text == "" {
			continue
		}
		out := s.run("new-window", "-d", "-P", "-F", "#{window_id}", "-n", FormatLiteral(text), "--", "sleep", "60")
		if got := strings.Join(s.run("display", "-p", "-t", out[0], "#{window_name}"), "\n"); got != text {
			t.Errorf("new-window -n %q: the window is named %q", text, got)
		}
		if strings.ContainsAny(text, "/\n") {
			continue // not a folder name here (a newline ends pwd's line)
		}
		dir := filepath.Join(dirs, text)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		out = s.run("new-window", "-d", "-P", "-F", "#{pane_id}", "-c", FormatLiteral(dir), "-e", "OUT="+dirs, "--", "sh", "-c", `pwd >"$OUT/pwd-$$"; sleep 60`)
		pane := out[0]
		deadline := time.Now().Add(10 * time.Second)
		for {
			pid := strings.Join(s.run("display", "-p", "-t", pane, "#{pane_pid}"), "")
			b, err := os.ReadFile(filepath.Join(dirs, "pwd-"+pid))
			if err == nil && len(b) > 0 {
				if got := strings.TrimSuffix(string(b), "\n"); got != dir {
					t.Errorf("new-window -c %q: the window started in %q", dir, got)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("new-window -c %q: the window's command never wrote its folder", dir)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	checkNotRun(t, cwd, dirs)
}

// A session Start creates gets its name and its first window's name as text, whatever '#' they
// hold.
func TestTmuxStartNamesAreText(t *testing.T) {
	tmux := tmuxPath(t)
	cwd, _ := os.Getwd()
	for _, tt := range []struct{ session, window string }{
		{"s#{pid}", "fix #(touch RAN) bug"},
		{"#(touch RAN)", "#{session_name} ##[x]"},
		{"a ##{pid} #S", "#W"},
	} {
		socket := filepath.Join(socketDir(t), "s")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := Start(ctx, StartOptions{Program: tmux, SocketPath: socket, ConfigFile: "/dev/null",
			Session: tt.session, WindowName: tt.window, Command: []string{"sleep", "60"}, Env: testEnv()})
		if err != nil {
			cancel()
			t.Fatalf("Start: %v", err)
		}
		got, err := c.Command(ctx, "list-windows", "-a", "-F", "#{session_name}|#{window_name}")
		if want := []string{tt.session + "|" + tt.window}; err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("list-windows: got %q, %v; want %q", got, err, want)
		}
		// Starting again attaches to the session of that name rather than making another.
		again, err := Start(ctx, StartOptions{Program: tmux, SocketPath: socket, Session: tt.session, Env: testEnv()})
		if err != nil {
			t.Errorf("Start on the session %q again: %v", tt.session, err)
		} else {
			if got, _ := again.Command(ctx, "list-sessions", "-F", "#{session_name}"); !reflect.DeepEqual(got, []string{tt.session}) {
				t.Errorf("after the second Start, the sessions are %q", got)
			}
			again.Close()
		}
		c.Close()
		cancel()
		exec.Command(tmux, "-S", socket, "kill-server").Run()
	}
	checkNotRun(t, cwd)
}

// A tmux server that stops (SIGSTOP, as a hung host would) ends a watched client with
// ErrNoAnswer; nothing else would, since its stream stays open.
func TestTmuxWatchStoppedServer(t *testing.T) {
	s := startServer(t)
	s.c.Watch(2 * time.Second)
	pid, err := strconv.Atoi(s.run("display-message", "-p", "#{pid}")[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	select {
	case <-s.c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the client did not end within 30 s of its server stopping")
	}
	if err := s.c.Err(); !errors.Is(err, ErrNoAnswer) {
		t.Fatalf("Err() = %v, want ErrNoAnswer", err)
	}
}
