package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/local"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// reports is a bus's app that records the Reports it gets, as "<caller> <request JSON>", and
// answers Ok.
type reports struct {
	mu   sync.Mutex
	got  []string
	note chan struct{}
}

func (r *reports) Facts(context.Context, api.Caller, api.Request) (local.Facts, error) {
	return local.Facts{Role: access.RoleTerminal}, nil
}

func (r *reports) Handle(_ context.Context, c *local.Call) (api.Answer, error) {
	js, _ := json.Marshal(c.Request)
	r.mu.Lock()
	r.got = append(r.got, c.From.String()+" "+string(js))
	r.mu.Unlock()
	select {
	case r.note <- struct{}{}:
	default:
	}
	return api.OK, nil
}

func (r *reports) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// TestEndedHook: on a tmux server with the app's pane-died hook, the end of a numbered window's
// process reaches the bus at once, as that terminal's end with its exit code (128 + the signal
// when one killed it), reported by krad-ade-agents ended, which tmux runs; the end of a window
// the app did not number reports nothing, and nothing of the hook shows on any pane.
func TestEndedHook(t *testing.T) {
	t.Parallel()
	needTmux(t)
	bin := testbin.Dir(t)
	rec := &reports{note: make(chan struct{}, 1)}
	served := apptest.Serve(t, local.Config{Handler: rec})
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v %s", args[0], err, out)
		}
		return strings.TrimSpace(string(out))
	}
	start := exec.Command("tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", "main", "sleep", "600")
	start.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + t.TempDir()}
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v %s", err, out)
	}
	t.Cleanup(func() { killServer(sock) })
	// As the app's setup makes the session: its variables, ends kept, the hook.
	tmux("set-environment", "-t", "main", api.VarEndpoint, served.Bus.Addr())
	tmux("set-environment", "-t", "main", api.VarToken, served.Token.Reveal())
	tmux("set-option", "-gw", "remain-on-exit", "on")
	tmux("set-hook", "-g", app.EndedHook, app.EndedHookCommand(filepath.Join(bin, "krad-ade-agents")))

	// window opens a window that runs script once it reads a line, numbered terminal n (0: not
	// numbered); it returns the window and its process.
	window := func(n int, script string) (string, int) {
		out := tmux("new-window", "-d", "-P", "-F", "#{window_id} #{pane_pid}", "-t", "main", "sh", "-c", "read x; "+script)
		w, pid, _ := strings.Cut(out, " ")
		if n > 0 {
			tmux("set-option", "-w", "-t", w, api.WindowTerminalOption, fmt.Sprintf("main:%d", n))
		}
		p, err := strconv.Atoi(pid)
		if err != nil {
			t.Fatal(err)
		}
		return w, p
	}
	// await waits for the bus to have n reports. tmux runs pane-died once it has collected the
	// process's status; tmux built with libutempter can miss the SIGCHLD until another child of
	// its own ends, and the app then starts one (collect, after its subscription saw the pane
	// dead): so does await, as the app would.
	await := func(n int) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for len(rec.requests()) < n {
			select {
			case <-rec.note:
			case <-time.After(500 * time.Millisecond):
				tmux("display-message", "-p", "#(true)")
			case <-deadline:
				t.Fatalf("the bus got %q after 30 s, want %d reports", rec.requests(), n)
			}
		}
	}

	stranger, _ := window(0, "exit 4")
	tmux("send-keys", "-t", stranger, "Enter")
	three, _ := window(3, "exit 3")
	tmux("send-keys", "-t", three, "Enter")
	await(1)
	_, pid := window(4, "exit 0")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	await(2)
	zero, _ := window(5, "exit 0")
	tmux("send-keys", "-t", zero, "Enter")
	await(3)
	want := []string{
		`Terminal main:3 {"Report":{"state":"failed","lifecycle":true,"exit_code":3}}`,
		`Terminal main:4 {"Report":{"state":"failed","lifecycle":true,"exit_code":137}}`,
		`Terminal main:5 {"Report":{"state":"done","lifecycle":true,"exit_code":0}}`,
	}
	// Every command the hook started has ended: what they did is done.
	server, err := strconv.Atoi(tmux("display-message", "-p", "#{pid}"))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); len(jobsOf(server, tmux("list-panes", "-a", "-F", "#{pane_pid}"))) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hook's commands still run after 30 s")
		}
	}
	if got := rec.requests(); !slices.Equal(got, want) {
		t.Errorf("the bus got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if modes := tmux("list-panes", "-a", "-F", "#{pane_in_mode}"); strings.Contains(modes, "1") {
		t.Errorf("a pane shows something of the hook: in a mode (%q)", modes)
	}
}

// jobsOf is the children of the tmux server pid that are no pane's process: the commands it runs
// itself (run-shell's).
func jobsOf(pid int, panes string) []int {
	isPane := map[string]bool{}
	for _, p := range strings.Fields(panes) {
		isPane[p] = true
	}
	var jobs []int
	for _, c := range sshdtest.Children(pid) {
		if !isPane[strconv.Itoa(c)] {
			jobs = append(jobs, c)
		}
	}
	return jobs
}
