package app_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// TestWorkerIsTheWindowsProcess: a worker's command is its window's own process (krad-ade-agents
// run --exec reported its start and became it), so that no process of the app's stays beside it,
// and what the window's process gets reaches the command itself: SIGTERM, a window size change,
// Ctrl-C. Its end is known with its exit code, as before.
func TestWorkerIsTheWindowsProcess(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	c := h.as(1)
	// Believed working (its own report) from the start, so that only its end settles it.
	script := `trap "exit 7" TERM; trap "echo size changed" WINCH; krad report working; echo ready; while :; do sleep 0.05; done`
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "w", Command: []string{"sh", "-c", script}})
	if w.State != api.StateWorking {
		t.Errorf("Spawn answered %s, want working: run reported the start", w.State)
	}
	h.waitScreen(c, w.Terminal, "ready")
	pid := h.panePID(w.Terminal)
	children := sshdtest.Children(pid)
	if got := comm(pid); got != "sh" || len(children) > 1 {
		t.Errorf("the window's process is %q with children %v, want the worker's command (sh), and its sleep at most", got, children)
	}
	for _, p := range append([]int{pid}, children...) {
		if got := comm(p); strings.HasPrefix(got, "krad") {
			t.Errorf("process %d of the worker's window is %s", p, got)
		}
	}
	if out, err := exec.Command("tmux", "-S", h.socket, "resize-window", "-t", h.window(w.Terminal), "-x", "90", "-y", "20").CombinedOutput(); err != nil {
		t.Fatalf("tmux resize-window: %v %s", err, out)
	}
	h.waitScreen(c, w.Terminal, "size changed")
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(30)}); got.State != api.StateFailed || exitOf(got) != "7" {
		t.Errorf("after SIGTERM, the worker is %s exit %s, want failed exit 7 (its trap)", got.State, exitOf(got))
	}

	s := h.agent(c, api.Spawn, &api.SpawnBody{Title: "s", Command: []string{"sh", "-c", "krad report working; echo ready; sleep 600"}})
	h.waitScreen(c, s.Terminal, "ready")
	spid := h.panePID(s.Terminal)
	if out, err := exec.Command("tmux", "-S", h.socket, "send-keys", "-t", h.window(s.Terminal), "C-c").CombinedOutput(); err != nil {
		t.Fatalf("tmux send-keys: %v %s", err, out)
	}
	a, err := h.call(c, api.Wait, &api.WaitBody{Target: api.Target(s.Terminal), TimeoutSecs: secs(30)})
	if err != nil {
		// Once seen on a loaded machine (run 30 of the suite), not since: say what tmux and
		// the kernel knew of the window's process.
		pane, _ := h.tmux("display-message", "-p", "-t", h.window(s.Terminal),
			"#{pane_dead} #{pane_dead_status} #{pane_dead_signal} #{pane_pid} #{pane_current_command}").CombinedOutput()
		status, _ := os.ReadFile("/proc/" + strconv.Itoa(spid) + "/status")
		t.Fatalf("Wait after Ctrl-C: %v\ntmux of the pane (dead, status, signal, pid, command): %s\nprocess %d: %s\nthe screen:\n%s",
			err, strings.TrimSpace(string(pane)), spid, procLines(status, "State:", "SigBlk:", "SigIgn:", "SigCgt:"), h.read(c, s.Terminal))
	}
	var got api.Agent
	if err := a.Decode("Agent", &got); err != nil {
		t.Fatal(err)
	}
	if got.State != api.StateFailed || exitOf(got) != "130" {
		t.Errorf("after Ctrl-C, the worker is %s exit %s, want failed exit 130", got.State, exitOf(got))
	}
}

// procLines are the lines of a /proc/PID/status that start with one of the names, on one line;
// "gone" when there are none (the process was reaped).
func procLines(status []byte, names ...string) string {
	var out []string
	for _, l := range strings.Split(string(status), "\n") {
		for _, n := range names {
			if strings.HasPrefix(l, n) {
				out = append(out, strings.Join(strings.Fields(l), " "))
			}
		}
	}
	if len(out) == 0 {
		return "gone"
	}
	return strings.Join(out, "; ")
}

// BenchmarkTerminalMemory is what a terminal costs in memory beyond tmux's own: N workers spawned
// through the app (as a lead spawns them, so through krad-ade-agents run) against N bare windows
// that `tmux new-window` opens with the same program, on a tmux server of their own, in the same
// run. Every process a terminal adds is counted: its pane's process and that process's
// descendants. Each is read from /proc/PID/smaps_rollup once all 2N run side by side, so that the
// program's shared pages are shared alike by both sides.
//
//	go test -run '^$' -bench TerminalMemory -benchtime 1x ./app
//
// It reports, per terminal: app-PSS-KiB and bare-PSS-KiB (proportional set size: a shared page
// counts divided among the processes that map it), their ratio app/bare, app-RSS-KiB and
// bare-RSS-KiB, and app-procs and bare-procs (processes per terminal). Beside them, not in them,
// app-server-PSS-KiB and bare-server-PSS-KiB: what each tmux server grew by, a window. The app's
// own process (here, the benchmark's) is left out.
func BenchmarkTerminalMemory(b *testing.B) {
	const n = 50
	const program = "sleep"
	argv := []string{program, "3600"}
	for range b.N {
		h := start(b, lead())
		c := h.as(1)
		bare := bareTmux(b)
		appServer, bareServer := tmuxPID(b, h.socket), tmuxPID(b, bare)
		appServer0, bareServer0 := sumMemory(b, [][]int{{appServer}}), sumMemory(b, [][]int{{bareServer}})
		for range n {
			h.agent(c, api.Spawn, &api.SpawnBody{Title: "w", Command: argv})
			if out, err := exec.Command("tmux", "-S", bare, "new-window", "-d", "--", program, "3600").CombinedOutput(); err != nil {
				b.Fatalf("tmux new-window: %v %s", err, out)
			}
		}
		// The app's windows past the lead's (terminal 1); the bare server's past its first.
		app := paneTrees(b, h.socket, program, func(term string) bool { return term != "main:1" })
		plain := paneTrees(b, bare, program, func(string) bool { return true })
		plain = plain[1:]
		if len(app) != n || len(plain) != n {
			b.Fatalf("%d terminals of the app and %d bare windows, want %d of each", len(app), len(plain), n)
		}
		a, p := sumMemory(b, app), sumMemory(b, plain)
		b.ReportMetric(a.pss/n, "app-PSS-KiB")
		b.ReportMetric(p.pss/n, "bare-PSS-KiB")
		b.ReportMetric(a.pss/p.pss, "app/bare")
		b.ReportMetric(a.rss/n, "app-RSS-KiB")
		b.ReportMetric(p.rss/n, "bare-RSS-KiB")
		b.ReportMetric(float64(a.procs)/n, "app-procs")
		b.ReportMetric(float64(p.procs)/n, "bare-procs")
		// What each tmux server grew by, a window: alike, as the windows are.
		b.ReportMetric((sumMemory(b, [][]int{{appServer}}).pss-appServer0.pss)/n, "app-server-PSS-KiB")
		b.ReportMetric((sumMemory(b, [][]int{{bareServer}}).pss-bareServer0.pss)/n, "bare-server-PSS-KiB")
		h.stop()
		killServer(h.socket)
		killServer(bare)
	}
}

// tmuxPID is the pid of the tmux server at socket.
func tmuxPID(b *testing.B, socket string) int {
	out, err := exec.Command("tmux", "-S", socket, "display-message", "-p", "#{pid}").Output()
	if err != nil {
		b.Fatalf("tmux display-message: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		b.Fatal(err)
	}
	return pid
}

// bareTmux starts a tmux server of the benchmark's own with one session, as the app's harness
// starts its own (-f /dev/null), and returns its socket.
func bareTmux(b *testing.B) string {
	sock := filepath.Join(b.TempDir(), "bare.sock")
	cmd := exec.Command("tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", "bare", "sleep", "3600")
	cmd.Env = append(os.Environ(), "TMUX=")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("tmux new-session: %v %s", err, out)
	}
	b.Cleanup(func() { killServer(sock) })
	return sock
}

// paneTrees lists, for each pane of the server at socket whose window's @krad_terminal keep
// accepts, the processes it runs: its pane's process and every descendant, in list-panes order.
// It waits until each tree runs program (the worker's command has started: a companion that
// runs it as a child may not have started it yet).
func paneTrees(b *testing.B, socket, program string, keep func(terminal string) bool) [][]int {
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := exec.Command("tmux", "-S", socket, "list-panes", "-a", "-F", "#{pane_pid} #{@krad_terminal}").Output()
		if err != nil {
			b.Fatalf("tmux list-panes: %v", err)
		}
		var trees [][]int
		ready := true
		for line := range strings.Lines(string(out)) {
			pid, term, _ := strings.Cut(strings.TrimSpace(line), " ")
			p, err := strconv.Atoi(pid)
			if err != nil || !keep(term) {
				continue
			}
			tree := []int{p}
			for i := 0; i < len(tree); i++ {
				tree = append(tree, sshdtest.Children(tree[i])...)
			}
			runs := false
			for _, q := range tree {
				if comm(q) == program {
					runs = true
				}
			}
			ready = ready && runs
			trees = append(trees, tree)
		}
		if ready {
			return trees
		}
		if time.Now().After(deadline) {
			b.Fatalf("the panes of %s do not all run %s after 30 s", socket, program)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// comm is a process's command name, "" when it is gone.
func comm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

type memory struct {
	pss, rss float64 // KiB
	procs    int
}

// sumMemory adds up the Pss and Rss lines of /proc/PID/smaps_rollup of every process of trees.
func sumMemory(b *testing.B, trees [][]int) memory {
	var m memory
	for _, tree := range trees {
		for _, pid := range tree {
			f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
			if err != nil {
				b.Fatalf("a terminal's process ended before it was measured: %v", err)
			}
			s := bufio.NewScanner(f)
			for s.Scan() {
				name, rest, _ := strings.Cut(s.Text(), ":")
				f := strings.Fields(rest)
				if len(f) != 2 || f[1] != "kB" {
					continue
				}
				v, err := strconv.ParseFloat(f[0], 64)
				if err != nil {
					continue
				}
				switch name {
				case "Pss":
					m.pss += v
				case "Rss":
					m.rss += v
				}
			}
			f.Close()
			m.procs++
		}
	}
	return m
}
