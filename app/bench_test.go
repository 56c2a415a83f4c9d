package app_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/tmux"
)

// These benchmarks measure the app against real tmux: run them with
//
//	go test -run '^$' -bench . -benchtime 200x ./app
//
// Each reports p50 and p99 in milliseconds beside the usual ns/op.

func reportPercentiles(b *testing.B, d []time.Duration) {
	b.Helper()
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	pct := func(p float64) float64 {
		return float64(d[min(len(d)-1, int(float64(len(d))*p))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchmarkFanout: 1,000 subscribers on the bus; each op is one state change (a terminal's
// Report), timed from the Report's start to the moment the last subscriber has read its event.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) { benchFanout(b, n) })
	}
}

func benchFanout(b *testing.B, subscribers int) {
	h := start(b, lead())
	lines := make(chan time.Time, subscribers*4)
	var ready sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range subscribers {
		conn, err := net.Dial("tcp", h.bus.Addr())
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		ready.Add(1)
		go func() {
			_ = api.WriteLine(conn, api.Envelope{Token: h.token, From: api.FromClient, Request: api.NewRequest(api.SubscribeAgents, nil)})
			r := bufio.NewReaderSize(conn, 64<<10)
			if _, err := r.ReadSlice('\n'); err != nil { // the snapshot
				ready.Done()
				return
			}
			ready.Done()
			for {
				line, err := r.ReadSlice('\n')
				if err != nil || ctx.Err() != nil {
					return
				}
				if bytes.HasPrefix(line, []byte(`{"AgentEvent"`)) {
					lines <- time.Now()
				}
			}
		}()
	}
	ready.Wait()
	c := h.as(1)
	states := []api.State{api.StateIdle, api.StateWorking}
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if _, err := h.call(c, api.Report, &api.ReportBody{State: states[i%2]}); err != nil {
			b.Fatal(err)
		}
		var last time.Time
		for range subscribers {
			select {
			case t := <-lines:
				last = t
			case <-time.After(10 * time.Second):
				b.Fatal("a subscriber did not get the event within 10 s")
			}
		}
		lat = append(lat, last.Sub(start))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkWaitWakeup: a lead waits on a worker that exits; each op is timed from the worker's
// exit (the time it wrote just before it exited) to the lead's answer. The worker is spawned as
// every worker is: krad-ade-agents run --exec reports its start and becomes its command, the
// window's own process.
//
//   - via=hook: tmux's pane-died hook, which the app sets, runs krad-ade-agents ended, which
//     reports the end over the bus (how the app learns of it).
//   - via=subscription: the hook is taken off the tmux server first, so that the app learns of
//     the exit from its subscription to pane deaths alone (its fallback).
func BenchmarkWaitWakeup(b *testing.B) {
	b.Run("via=hook", func(b *testing.B) { benchWaitWakeup(b, true) })
	b.Run("via=subscription", func(b *testing.B) { benchWaitWakeup(b, false) })
}

func benchWaitWakeup(b *testing.B, hook bool) {
	h := start(b, lead())
	c := h.as(1)
	if !hook {
		if out, err := h.tmux("set-hook", "-gu", app.EndedHook).CombinedOutput(); err != nil {
			b.Fatalf("tmux set-hook: %v %s", err, out)
		}
	}
	dir := b.TempDir()
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		stamp := filepath.Join(dir, strconv.Itoa(i))
		// Believed working until it exits, as an agent whose hooks report is.
		script := fmt.Sprintf(`krad report working; read x; date +%%s%%N > %s; exit 0`, stamp)
		n := h.agent(c, api.Spawn, &api.SpawnBody{Title: "w", Command: []string{"sh", "-c", script}}).Terminal
		woke := make(chan time.Time, 1)
		go func() {
			a, err := h.call(c, api.Wait, &api.WaitBody{Target: api.Target(n), TimeoutSecs: secs(30)})
			var ag api.Agent
			if err == nil {
				err = a.Decode("Agent", &ag)
			}
			if err != nil || ag.State != api.StateDone {
				b.Errorf("the Wait answered %+v, %v; want done", ag, err)
				woke <- time.Time{}
				return
			}
			woke <- time.Now()
		}()
		// The Wait is in; the random part samples every phase of tmux's once-a-second checks.
		time.Sleep(50*time.Millisecond + rand.N(time.Second))
		b.StartTimer()
		if err := exec.Command("tmux", "-S", h.socket, "send-keys", "-t", h.window(n), "Enter").Run(); err != nil {
			b.Fatal(err)
		}
		answered := <-woke
		b.StopTimer()
		if answered.IsZero() {
			b.Fatal("the Wait failed")
		}
		lat = append(lat, answered.Sub(readStamp(b, stamp)))
		_, _ = h.call(c, api.Close, &api.CloseBody{Target: api.Target(n)})
		b.StartTimer()
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

func readStamp(b *testing.B, path string) time.Time {
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return time.Unix(0, ns)
}

// BenchmarkTmuxPaneDeath is the baseline of via=subscription: tmux alone, a control client subscribed to
// pane deaths, timed from the process's exit to the notification.
func BenchmarkTmuxPaneDeath(b *testing.B) {
	dir := b.TempDir()
	sock := filepath.Join(dir, "s")
	deaths := make(chan time.Time, 16)
	c, err := tmux.Start(context.Background(), tmux.StartOptions{
		SocketPath: sock, ConfigFile: "/dev/null", Session: "bench",
		OnNotification: func(_ *tmux.Client, n tmux.Notification) {
			if s, ok := n.(tmux.SubscriptionChanged); ok && strings.HasPrefix(s.Value, "1 ") {
				deaths <- time.Now()
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _, _ = c.Command(context.Background(), "kill-server"); c.Close() }()
	ctx := context.Background()
	for _, args := range [][]string{
		{"set-option", "-gw", "remain-on-exit", "on"},
		{"refresh-client", "-B", "dead:%*:#{pane_dead} #{pane_dead_status}"},
	} {
		if _, err := c.Command(ctx, args...); err != nil {
			b.Fatal(err)
		}
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		stamp := filepath.Join(dir, strconv.Itoa(i))
		out, err := c.Command(ctx, "new-window", "-d", "-P", "-F", "#{window_id}", fmt.Sprintf("read x; date +%%s%%N > %s; exit 0", stamp))
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(50*time.Millisecond + rand.N(time.Second)) // every phase of tmux's checks
		b.StartTimer()
		if _, err := c.Command(ctx, "send-keys", "-t", out[0], "Enter"); err != nil {
			b.Fatal(err)
		}
		var got time.Time
		select {
		case got = <-deaths:
		case <-time.After(10 * time.Second):
			b.Fatal("no pane death notification in 10 s")
		}
		b.StopTimer()
		lat = append(lat, got.Sub(readStamp(b, stamp)))
		_, _ = c.Command(ctx, "kill-window", "-t", out[0])
		b.StartTimer()
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkRead and BenchmarkSend: one request each, lead to worker, through the bus and tmux.
func BenchmarkRead(b *testing.B) {
	h := start(b, lead())
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "w", Command: []string{"sh", "-c", "seq 1 40; sleep 600"}})
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := h.call(c, api.Read, &api.ReadBody{Target: api.Target(w.Terminal)}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

func BenchmarkSend(b *testing.B) {
	for _, enter := range []bool{false, true} {
		b.Run(fmt.Sprintf("enter=%v", enter), func(b *testing.B) {
			h := start(b, lead())
			c := h.as(1)
			w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "w", Command: []string{"sh", "-c", "cat >/dev/null"}})
			var lat []time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if _, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(w.Terminal), Text: "hello", Enter: &enter}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkRunVariants8 is issue 12's RunVariants of 8 on the Go-source repository (see
// testbin.GoSourceRepo): from the request to all 8 workers `working`, each in its own group's
// checkout, against the same by hand: 8 `git worktree add -q --lock -b krad/NAME DIR HEAD` one
// after another, then 8 Spawns whose workers start in those checkouts, until all 8 are working.
// Paired (testbin.PairedTimes); what each side made is removed untimed after each pair, and
// the disk synced. Run with, for example:
//
//	go test -run '^$' -bench 'RunVariants8' -benchtime 2x -count 3 ./app
func BenchmarkRunVariants8(b *testing.B) {
	const n = 8
	tmp := b.TempDir()
	repo, root := filepath.Join(tmp, "gosrc"), filepath.Join(tmp, "worktrees")
	if err := testbin.GoSourceRepo(repo); errors.Is(err, testbin.ErrNoGoSource) {
		b.Skip(err)
	} else if err != nil {
		b.Fatal(err)
	}
	// An agent at work prints; these workers do not, so that what is timed is the app's: the
	// quiet spell that would make them idle is longer than the run.
	h := start(b, lead(), func(c *app.Config) { c.Dir, c.WorktreeRoot, c.Quiet = repo, root, time.Hour })
	c := h.as(1)
	git := func(args ...string) {
		b.Helper()
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// allWorking waits until every terminal of ts has been seen working.
	allWorking := func(b *testing.B, ts []int) {
		seen := map[int]bool{}
		for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
			for _, a := range h.agents(h.as(0)) {
				if slices.Contains(ts, a.Terminal) && a.State == api.StateWorking {
					seen[a.Terminal] = true
				}
			}
			working := len(seen)
			if working == len(ts) {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d workers working after 5 minutes", working, len(ts))
			}
		}
	}
	closeAll := func(b *testing.B, ts []int) {
		for _, t := range ts {
			if _, err := h.call(c, api.Close, &api.CloseBody{Target: api.Target(t)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	// groupsGone waits until the repository has no worktree but its main one.
	groupsGone := func(b *testing.B) {
		for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
			out, err := exec.Command("git", "-C", repo, "worktree", "list", "--porcelain").Output()
			if err == nil && bytes.Count(out, []byte("worktree ")) == 1 {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("the groups were not retired within 5 minutes:\n%s", out)
			}
		}
	}
	pair := 0
	byHand := func(b *testing.B) time.Duration {
		pair++
		var dirs, names []string
		t0 := time.Now()
		for i := range n {
			name := fmt.Sprintf("hand-%d-%d", pair, i+1)
			dir := filepath.Join(root, "by-hand", name)
			git("worktree", "add", "-q", "--lock", "-b", "krad/"+name, "--", dir, "HEAD")
			dirs, names = append(dirs, dir), append(names, name)
		}
		var ts []int
		for _, dir := range dirs {
			w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "by hand", Command: []string{"sh", "-c", `cd "$1" && exec sleep 600`, "sh", dir}})
			ts = append(ts, w.Terminal)
		}
		allWorking(b, ts)
		d := time.Since(t0)
		closeAll(b, ts)
		for i, dir := range dirs {
			git("worktree", "remove", "--force", "--force", "--", dir)
			git("branch", "-q", "-D", "--", "krad/"+names[i])
		}
		return d
	}
	variants := func(b *testing.B) time.Duration {
		t0 := time.Now()
		var v api.Variants
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		a, err := c.Call(ctx, api.NewRequest(api.RunVariants, &api.RunVariantsBody{Title: fmt.Sprintf("bench %d", pair),
			Agents: []api.VariantAgent{{Command: []string{"sh", "-c", "exec sleep 600"}, Count: n}}}))
		cancel()
		if err == nil {
			err = a.Decode(api.AnswerVariants, &v)
		}
		if err != nil {
			b.Fatal(err)
		}
		var ts []int
		for _, x := range v.Variants {
			ts = append(ts, x.Agent.Terminal)
		}
		if len(ts) != n {
			b.Fatalf("RunVariants started %d workers, want %d", len(ts), n)
		}
		allWorking(b, ts)
		d := time.Since(t0)
		closeAll(b, ts)
		groupsGone(b)
		return d
	}
	b.ResetTimer()
	testbin.PairedTimes(b, byHand, variants, func() { syscall.Sync() })
}
