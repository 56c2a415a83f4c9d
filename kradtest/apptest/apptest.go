// Package apptest runs krad-ade as a child process for tests: the real binary, with the
// environment a test gives it, its stdout read line by line and its log (stderr) kept, stopped
// when the test ends. It checks on the way what every run must hold: the first line says where
// the bus is, the app stops on SIGTERM, and no line it printed holds a secret the test names.
//
// For tests that need the app's parts rather than the program, [Serve] and [ServeApp] run the
// bus, and the app behind it, in the test's process.
package apptest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Options say how to start the app.
type Options struct {
	// Program is the krad-ade binary's path; Env its whole environment; Args its arguments.
	Program string
	Env     []string
	Args    []string
	// Dir is the folder it starts in, its local environment's folder; "" the test's.
	Dir string
	// Secrets, when set, is called after the app stopped: no line of its stdout or log may hold
	// any string it returns (the bus tokens the test read).
	Secrets func() []string
	// StopWithin is how long the app may take to stop on SIGTERM at the end of the test: 10 s
	// when zero.
	StopWithin time.Duration
}

// App is one run of krad-ade.
type App struct {
	t       testing.TB
	Cmd     *exec.Cmd
	Started time.Time
	Log     *Buffer // its stderr
	// Bus is the endpoint its first line names, 127.0.0.1:PORT; First is that line.
	Bus   string
	First string

	exited chan struct{}
	code   int

	mu    sync.Mutex
	lines []Line // its stdout
}

// Line is one line of the app's stdout, with when it was read.
type Line struct {
	At   time.Time
	Text string
}

// BusLine is the app's first line: where its bus is, then what it says of api.json.
var BusLine = regexp.MustCompile(`^krad-ade: bus on (127\.0\.0\.1:\d+); (.*)$`)

// Start starts the app and waits up to 20 s for its first line, which must be BusLine. When the
// test ends the app is stopped with SIGTERM if it still runs, its output is logged if the test
// failed, and the secrets are looked for in it.
func Start(t testing.TB, o Options) *App {
	t.Helper()
	a := &App{t: t, Log: &Buffer{}, exited: make(chan struct{})}
	a.Cmd = exec.Command(o.Program, o.Args...)
	a.Cmd.Env = o.Env
	a.Cmd.Dir = o.Dir
	a.Cmd.Stderr = a.Log
	// A pipe of the test's own rather than StdoutPipe: Wait then returns when the app exits, even
	// if a process it started still holds the pipe.
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	a.Cmd.Stdout = w
	a.Started = time.Now()
	err = a.Cmd.Start()
	w.Close()
	if err != nil {
		out.Close()
		t.Fatalf("start krad-ade: %v", err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer out.Close()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			a.mu.Lock()
			a.lines = append(a.lines, Line{time.Now(), sc.Text()})
			a.mu.Unlock()
		}
	}()
	go func() {
		_ = a.Cmd.Wait()
		a.code = a.Cmd.ProcessState.ExitCode()
		select { // the lines it printed last, unless another process holds the pipe
		case <-read:
		case <-time.After(2 * time.Second):
		}
		close(a.exited)
	}()
	stopWithin := o.StopWithin
	if stopWithin == 0 {
		stopWithin = 10 * time.Second
	}
	t.Cleanup(func() {
		select {
		case <-a.exited:
		default:
			_ = a.Cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-a.exited:
			case <-time.After(stopWithin):
				_ = a.Cmd.Process.Kill()
				<-a.exited
				t.Errorf("krad-ade (pid %d) did not stop within %v of SIGTERM", a.PID(), stopWithin)
			}
		}
		if t.Failed() {
			t.Logf("krad-ade (pid %d) stdout:\n%s\nits log:\n%s", a.PID(), a.Stdout(), a.Log)
		}
		if o.Secrets != nil {
			printed := a.Stdout() + a.Log.String()
			for _, s := range o.Secrets() {
				if s != "" && strings.Contains(printed, s) {
					t.Errorf("krad-ade (pid %d) printed a bus token", a.PID())
					break
				}
			}
		}
	})
	m, _ := a.WaitLine(20*time.Second, BusLine)
	a.Bus = m[1]
	a.First = m[0]
	if l := a.Lines(); len(l) == 0 || l[0].Text != a.First {
		t.Fatalf("krad-ade's first line is %q, want %q", l[0].Text, BusLine)
	}
	return a
}

// Exit runs the app when it should exit by itself, as when it refuses to start, and returns its
// exit code, stdout and stderr. If it still runs after within, it is killed and the test fails.
func Exit(t testing.TB, o Options, within time.Duration) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(o.Program, o.Args...)
	cmd.Env = o.Env
	var out, errOut Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// Wait returns when the app exits, even if a process it started holds its output.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start krad-ade: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(within):
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		t.Errorf("krad-ade (pid %d) still ran %v after it started; stdout:\n%s\nstderr:\n%s", cmd.Process.Pid, within, out.String(), errOut.String())
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// PID is the app's process id.
func (a *App) PID() int { return a.Cmd.Process.Pid }

// Lines are the app's stdout lines so far.
func (a *App) Lines() []Line {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Line(nil), a.lines...)
}

// Stdout is the app's stdout so far.
func (a *App) Stdout() string {
	var b strings.Builder
	for _, l := range a.Lines() {
		fmt.Fprintf(&b, "%s\n", l.Text)
	}
	return b.String()
}

// Stop sends sig and waits up to within for the app to exit (killing it after that, and failing
// the test); it returns the exit code and how long the app took.
func (a *App) Stop(sig syscall.Signal, within time.Duration) (int, time.Duration) {
	a.t.Helper()
	start := time.Now()
	_ = a.Cmd.Process.Signal(sig)
	select {
	case <-a.exited:
	case <-time.After(within):
		_ = a.Cmd.Process.Kill()
		<-a.exited
		a.t.Errorf("krad-ade did not stop within %v of %v", within, sig)
	}
	return a.code, time.Since(start)
}

// WaitLine waits for a stdout line that matches one of res, and returns its submatches and which
// one matched. It fails the test if none comes within d or the app exits first.
func (a *App) WaitLine(d time.Duration, res ...*regexp.Regexp) ([]string, int) {
	a.t.Helper()
	deadline := time.Now().Add(d)
	for {
		for _, l := range a.Lines() {
			for i, re := range res {
				if m := re.FindStringSubmatch(l.Text); m != nil {
					return m, i
				}
			}
		}
		select {
		case <-a.exited:
			a.t.Fatalf("krad-ade exited (code %d) before printing a line like %v; stdout:\n%s\nlog:\n%s", a.code, res, a.Stdout(), a.Log)
		default:
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("krad-ade printed no line like %v within %v; stdout:\n%s\nlog:\n%s", res, d, a.Stdout(), a.Log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// LineAt is when the first stdout line starting with prefix was read, since the app started;
// -1 when there is none.
func (a *App) LineAt(prefix string) time.Duration {
	for _, l := range a.Lines() {
		if strings.HasPrefix(l.Text, prefix) {
			return l.At.Sub(a.Started)
		}
	}
	return -1
}

// Buffer is a bytes.Buffer that one goroutine may write while others read it: a process's
// output.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
