//go:build unix

package worktree

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/proctest"
)

// setupGroup makes a group whose rule has the setup command command, with a limit of secs.
func setupGroup(t *testing.T, command string, secs int) (*Repo, Group) {
	t.Helper()
	dir := newRepo(t)
	res := Do(context.Background(), Op{Op: OpCreate, Dir: dir, Root: t.TempDir(), Create: &CreateOptions{Name: "set"},
		Setups: []SetupRule{{Path: dir, Command: command, TimeoutSecs: secs}}})
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	if s := res.Group.Setup; s == nil || s.State != SetupPending || s.Command != command {
		t.Fatalf("Create: the group's setup is %+v, want %q pending", s, command)
	}
	return open(t, dir), *res.Group
}

// listed is group name as Groups lists it now.
func listed(t *testing.T, r *Repo, name string) Group {
	t.Helper()
	g, err := open(t, r.Top).group(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestSetupRuns: the group's first terminal runs its setup, in the checkout, with the group's
// variables, its output to the terminal; it is done, and the next terminal does not run it again.
func TestSetupRuns(t *testing.T) {
	r, g := setupGroup(t, `echo "$KRAD_ADE_GROUP $KRAD_ADE_PORT $(pwd -P)" >> setup.out; echo set up`, 0)
	if g.Setup.TimeoutSecs != int(DefaultSetupTimeout/time.Second) {
		t.Errorf("the limit is %d s, want the default", g.Setup.TimeoutSecs)
	}
	var out bytes.Buffer
	var running []Setup
	s, err := RunSetup(context.Background(), SetupRun{Dir: g.Dir, Group: "set", Terminal: "main:2", Env: os.Environ(), Out: &out,
		Running: func(s Setup) { running = append(running, s) }})
	if err != nil || s == nil || s.State != SetupDone || s.ExitCode != nil || s.Terminal != "main:2" {
		t.Fatalf("RunSetup = %+v, %v; want done, by main:2", s, err)
	}
	if len(running) != 1 || running[0].State != SetupRunning {
		t.Errorf("Running was called with %+v, want once, running", running)
	}
	if out.String() != "set up\n" {
		t.Errorf("the terminal got %q", out.String())
	}
	want := "set " + strconv.Itoa(g.Port) + " " + g.Dir + "\n"
	if got, _ := os.ReadFile(filepath.Join(g.Dir, "setup.out")); string(got) != want {
		t.Errorf("setup.out = %q, want %q", got, want)
	}
	if l := listed(t, r, "set"); l.Setup == nil || l.Setup.State != SetupDone {
		t.Errorf("Groups lists the setup as %+v, want done", l.Setup)
	}
	s, err = RunSetup(context.Background(), SetupRun{Dir: g.Dir, Group: "set", Terminal: "main:3", Out: &out,
		Running: func(Setup) { t.Error("the setup ran again") }})
	if err != nil || s.State != SetupDone || s.Terminal != "main:2" {
		t.Errorf("RunSetup again = %+v, %v; want main:2's done", s, err)
	}
	if got, _ := os.ReadFile(filepath.Join(g.Dir, "setup.out")); string(got) != want {
		t.Errorf("setup.out = %q after a second terminal, want one run", got)
	}
}

// TestSetupFails: a setup that exits non-zero has failed, with its exit code and the end of its
// output; the app's own retire keeps the group (for the person to look at), the person's does not.
func TestSetupFails(t *testing.T) {
	r, g := setupGroup(t, `i=0; while [ $i -lt 50 ]; do echo "line $i"; i=$((i+1)); done; echo 'npm ERR! missing: left-pad' >&2; exit 3`, 0)
	s, err := RunSetup(context.Background(), SetupRun{Dir: g.Dir, Group: "set", Terminal: "main:2", Out: &bytes.Buffer{}})
	if err != nil || s.State != SetupFailed || s.ExitCode == nil || *s.ExitCode != 3 || s.Why != "exited with 3" {
		t.Fatalf("RunSetup = %+v, %v; want failed, exit code 3", s, err)
	}
	l := listed(t, r, "set")
	if l.Setup.State != SetupFailed || !strings.HasSuffix(l.Setup.Output, "line 49\nnpm ERR! missing: left-pad\n") {
		t.Errorf("Groups lists the setup as %+v, want failed with its output", l.Setup)
	}
	msg := l.Setup.FailedMessage(l)
	if !strings.Contains(msg, "exited with 3") || !strings.Contains(msg, "krad retire set") || !strings.Contains(msg, "  | npm ERR! missing: left-pad") ||
		strings.Contains(msg, "line 29\n") || !strings.Contains(msg, "line 31") {
		t.Errorf("FailedMessage = %s; want how, what to do, and the last 20 lines", msg)
	}
	res := Do(context.Background(), Op{Op: OpRetire, Dir: r.Top, Group: "set", Auto: true})
	if res.Error == nil || !errors.Is(res.Error, ErrConflict) || !strings.Contains(res.Error.Message, "kept for you to look at") {
		t.Fatalf("the app's retire = %+v, want a conflict: kept", res)
	}
	if _, err := os.Stat(g.Dir); err != nil {
		t.Fatalf("the checkout went: %v", err)
	}
	if res := Do(context.Background(), Op{Op: OpRetire, Dir: r.Top, Group: "set"}); res.Error != nil || !res.Retired.Removed {
		t.Errorf("the person's retire = %+v, want it removed", res)
	}
}

// TestSetupStoppedAtItsLimit: a setup that hangs is stopped at its limit, its whole process
// group (a child in the background, and one that ignores SIGTERM, killed after the grace); it has
// failed, saying so.
func TestSetupStoppedAtItsLimit(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to see the processes")
	}
	defer func(g time.Duration) { setupGrace = g }(setupGrace)
	setupGrace = 300 * time.Millisecond
	_, g := setupGroup(t, `echo $$ > shell.pid; (trap '' TERM; exec sleep 300) & echo $! > child.pid; sleep 300 & wait`, 1)
	began := time.Now()
	s, err := RunSetup(context.Background(), SetupRun{Dir: g.Dir, Group: "set", Terminal: "main:2", Out: &bytes.Buffer{}})
	took := time.Since(began)
	if err != nil || s.State != SetupFailed || !strings.Contains(s.Why, "stopped at its time limit of 1s") {
		t.Fatalf("RunSetup = %+v, %v; want failed at its limit", s, err)
	}
	if took < time.Second {
		t.Errorf("it ended after %v, before its limit", took)
	}
	for _, f := range []string{"shell.pid", "child.pid"} {
		data, err := os.ReadFile(filepath.Join(g.Dir, f))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid == 0 {
			t.Fatalf("%s: %q, %v", f, data, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for proctest.Running(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond) // init reaps the orphan in its own time
		}
		if proctest.Running(pid) {
			t.Errorf("process %d (%s) outlived the setup", pid, f)
		}
	}
}

// TestSetupWaitsForTheFirst: a terminal that joins while the first runs the setup waits for it,
// and is told; the setup runs once.
func TestSetupWaitsForTheFirst(t *testing.T) {
	_, g := setupGroup(t, `echo run >> runs; while [ ! -e go ]; do sleep 0.02; done`, 0)
	first := make(chan *Setup, 1)
	running := make(chan struct{})
	go func() {
		s, err := RunSetup(context.Background(), SetupRun{Dir: g.Dir, Group: "set", Terminal: "main:2", Out: &bytes.Buffer{},
			Running: func(Setup) { close(running) }})
		if err != nil {
			t.Error(err)
		}
		first <- s
	}()
	<-running
	var waited []Setup
	var mu sync.Mutex
	second := make(chan *Setup, 1)
	go func() {
		s, err := RunSetup(context.Background(), SetupRun{Dir: g.Dir, Group: "set", Terminal: "main:3", Out: &bytes.Buffer{},
			Waiting: func(s Setup) {
				mu.Lock()
				waited = append(waited, s)
				mu.Unlock()
				write(t, g.Dir, "go", "")
			}})
		if err != nil {
			t.Error(err)
		}
		second <- s
	}()
	a, b := <-first, <-second
	if a.State != SetupDone || b.State != SetupDone || b.Terminal != "main:2" {
		t.Errorf("RunSetup = %+v and %+v, want both done, by main:2", a, b)
	}
	if len(waited) != 1 || waited[0].State != SetupRunning || waited[0].Terminal != "main:2" {
		t.Errorf("Waiting was called with %+v, want main:2 running", waited)
	}
	if got, _ := os.ReadFile(filepath.Join(g.Dir, "runs")); string(got) != "run\n" {
		t.Errorf("runs = %q, want one run", got)
	}
}

// TestSetupInterrupted: a terminal closed while its setup runs leaves it pending, and the next
// terminal runs it again.
func TestSetupInterrupted(t *testing.T) {
	r, g := setupGroup(t, `echo run >> runs; [ -e go ] || sleep 300`, 0)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := RunSetup(ctx, SetupRun{Dir: g.Dir, Group: "set", Terminal: "main:2", Out: &bytes.Buffer{},
		Running: func(Setup) { time.AfterFunc(200*time.Millisecond, cancel) }})
	if err != nil || s.State != SetupPending || !strings.Contains(s.Why, "runs it again") {
		t.Fatalf("RunSetup cancelled = %+v, %v; want pending again", s, err)
	}
	if l := listed(t, r, "set"); l.Setup.State != SetupPending {
		t.Errorf("Groups lists it %+v, want pending", l.Setup)
	}
	write(t, g.Dir, "go", "")
	s, err = RunSetup(context.Background(), SetupRun{Dir: g.Dir, Group: "set", Terminal: "main:3", Out: &bytes.Buffer{}})
	if err != nil || s.State != SetupDone || s.Terminal != "main:3" {
		t.Errorf("RunSetup again = %+v, %v; want done by main:3", s, err)
	}
	if got, _ := os.ReadFile(filepath.Join(g.Dir, "runs")); string(got) != "run\nrun\n" {
		t.Errorf("runs = %q, want two runs", got)
	}
}

// TestSetupNone: a group made without a setup command has none to run.
func TestSetupNone(t *testing.T) {
	_, g := newGroup(t, "plain")
	if s, err := RunSetup(context.Background(), SetupRun{Dir: g.Dir, Group: "plain"}); s != nil || err != nil {
		t.Errorf("RunSetup = %+v, %v; want nothing", s, err)
	}
}
