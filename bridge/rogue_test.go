package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/roguetmux"
)

// The tests here stand for a compromised host: its tmux (roguetmux, first on the PATH of the
// host's user, reached over the real sshd as any host's tmux is) says what an attacker wants.

// startRogue starts the world with the rogue tmux as the host's tmux.
func startRogue(t *testing.T, o roguetmux.Options, log *apptest.Buffer) (*world, *roguetmux.Tmux) {
	t.Helper()
	rt := roguetmux.Write(t, t.TempDir(), o)
	w := startWorld(t, worldOptions{
		hostEnv: []string{"PATH=" + rt.Bin + ":/usr/local/bin:/usr/bin:/bin"},
		log:     slog.New(slog.NewTextHandler(log, nil)),
		noWait:  o.Refuse != "",
	})
	if _, err := os.Stat(rt.Commands); err != nil && o.Refuse == "" {
		t.Fatalf("the host's tmux is not the rogue one: %v", err)
	}
	return w, rt
}

// waitFile waits for path to exist.
func waitFile(t *testing.T, path string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", path, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// environmentAgents is ListAll of environment build, as this computer's Client sees it.
func (w *world) environmentAgents() []api.Agent {
	w.t.Helper()
	var all, build []api.Agent
	w.call(&api.Client{Endpoint: w.bus.Addr(), Token: w.token, From: api.FromClient}, api.ListAll, nil, &all)
	for _, a := range all {
		if a.Environment == "build" {
			build = append(build, a)
		}
	}
	return build
}

// TestHostFloodsWindows: a host's tmux that says %window-add for 20,000 windows, all of which it
// then shows as real, costs the app a bounded amount of memory and goroutines (one worker per
// environment and a set of at most 256 windows, not a goroutine a line), and gets it
// DefaultMaxTerminals terminals: then subscribers get terminal_limit, the rest of the windows are
// left alone, and Spawn is refused with conflict. 20,000 windows are past both bounds (the 256 a
// set holds, the 1,000 terminals); cmd/krad-ade's TestCompromisedHostTmux floods 300,000 into
// the real krad-ade.
func TestHostFloodsWindows(t *testing.T) {
	var log apptest.Buffer
	w, rt := startRogue(t, roguetmux.Options{Flood: roguetmux.WindowAdds(1000, 20000), Listed: roguetmux.WindowList(1000, 20000)}, &log)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan api.AppEvent, 16)
	go func() {
		client := &api.Client{Endpoint: w.bus.Addr(), Token: w.token, From: api.FromClient}
		_ = client.Subscribe(ctx, api.NewRequest(api.SubscribeAgents, nil), func(a api.Answer) error {
			var ev api.AppEvent
			if a.Decode("AppEvent", &ev) == nil && ev.Kind == api.TerminalLimit {
				events <- ev
			}
			return nil
		})
	}()

	// Memory and goroutines, sampled until the flood has been read and numbered.
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	g0 := runtime.NumGoroutine()
	var peakMem uint64
	peakG := 0
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		peakMem = max(peakMem, m.HeapInuse+m.StackInuse)
		peakG = max(peakG, runtime.NumGoroutine())
		if peakG > g0+500 {
			t.Fatalf("%d goroutines during the flood (%d before): work a line", peakG, g0)
		}
	}
	flooded := time.Now().Add(3 * time.Minute)
	for {
		sample()
		if _, err := os.Stat(rt.Flooded); err == nil {
			break
		}
		if time.Now().After(flooded) {
			t.Fatal("the host's tmux did not finish its flood within 3 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var agents []api.Agent
	deadline := time.Now().Add(3 * time.Minute)
	for {
		sample()
		if agents = w.environmentAgents(); len(agents) >= app.DefaultMaxTerminals || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	sample()
	grew := int64(peakMem) - int64(base.HeapInuse+base.StackInuse)
	t.Logf("the flood: peak %d goroutines (%d before), heap and stacks grew by at most %d MB", peakG, g0, grew>>20)
	if grew > 200<<20 {
		t.Errorf("the app's heap and stacks grew by %d MB during the flood, want a bounded amount (under 200 MB)", grew>>20)
	}
	if len(agents) != app.DefaultMaxTerminals {
		t.Fatalf("build has %d terminals, want %d (the limit)", len(agents), app.DefaultMaxTerminals)
	}
	select {
	case ev := <-events:
		if ev.Environment != "build" || !strings.Contains(ev.Message, fmt.Sprint(app.DefaultMaxTerminals)) {
			t.Errorf("the limit event is %+v", ev)
		}
	case <-time.After(30 * time.Second):
		t.Error("no terminal_limit event")
	}
	// Nothing more is numbered, and the lead cannot spawn past the limit.
	time.Sleep(time.Second)
	if n := len(w.environmentAgents()); n != app.DefaultMaxTerminals {
		t.Errorf("build has %d terminals a second later, want %d", n, app.DefaultMaxTerminals)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	_, err := w.as(1).Call(cctx, api.NewRequest(api.Spawn, &api.SpawnBody{Title: "one more", Command: []string{"true"}}))
	var e *api.Error
	if !errors.As(err, &e) || e.Code != api.CodeConflict || !strings.Contains(e.Message, "has 1000 terminals") {
		t.Errorf("Spawn past the limit: %v, want conflict naming the limit", err)
	}
	if n := len(log.String()); n > 64<<10 {
		t.Errorf("the flood made %d KB of log", n>>10)
	}
}

// TestHostSendsWhatTheAppCannotUse: a host's tmux that lists 100,000 lines the app cannot read,
// six windows whose @krad holds 3 MB of control characters each (18 MB, over what krad reads),
// a terminal number near 2^63, a session's next number past 2^64 and an exit status past any a
// process has, that fails every attempt to number a window with an error full of escapes, and
// that floods %window-add for 20,000 windows: this computer's List stays small and keeps working,
// the numbers stay in range (the next worker is build:5, not build:-9223372036854775808), and
// the app's log holds one summary of each kind of problem and a few rate-limited warnings, with
// no raw escape in them.
func TestHostSendsWhatTheAppCannotUse(t *testing.T) {
	windows := make([]string, 0, 100010)
	for range 100000 {
		windows = append(windows, "x")
	}
	huge := strings.Repeat(`\u0001`, 500000)
	for i := range 6 {
		windows = append(windows, fmt.Sprintf(`@%d %%%d 0   0 {"terminal":%d,"title":"t","role":"shell","session":"%s"}`, 10+i, 10+i, 10+i, huge))
	}
	windows = append(windows,
		`@20 %20 0   0 {"terminal":9223372036854775807,"title":"big","role":"lead","session":"build:9223372036854775807"}`,
		`@21 %21 1 99999999999999999999  0 {"terminal":3,"title":"dead","role":"shell"}`,
	)
	escapes := strings.Repeat("\x1b]0;pwned\x07\x1b[2J", 150)
	var log apptest.Buffer
	// Warnings start during the flood, or before it: what the rate allows counts from here.
	began := time.Now()
	w, rt := startRogue(t, roguetmux.Options{
		Windows:      windows,
		Next:         "99999999999999999999",
		DisplayError: "can't find window " + escapes,
		Flood:        roguetmux.WindowAdds(1000, 20000),
		Listed:       roguetmux.WindowList(1000, 20000),
	}, &log)
	waitFile(t, rt.Flooded, 2*time.Minute)

	var all []api.Agent
	client := &api.Client{Endpoint: w.bus.Addr(), Token: w.token, From: api.FromClient}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := client.Call(ctx, api.NewRequest(api.ListAll, nil))
	if err != nil {
		t.Errorf("ListAll from this computer: %v", err)
	} else if err := a.Decode("Agents", &all); err != nil {
		t.Error(err)
	}
	if len(a.Body) > 64<<10 {
		t.Errorf("ListAll is %d KB", len(a.Body)>>10)
	}
	for _, ag := range all {
		if ag.Terminal < 1 || ag.Terminal > 100 || strings.ContainsFunc(ag.Title+ag.Session+ag.Group, func(r rune) bool { return r < 0x20 }) {
			t.Errorf("an agent out of range: %.200q", fmt.Sprintf("%+v", ag))
		}
		if ag.Environment == "build" && ag.Terminal == 3 && (ag.State != api.StateFailed || ag.ExitCode == nil || *ag.ExitCode != -1) {
			t.Errorf("build:3, dead with an exit status out of range, is %s (exit code %v), want failed with -1", ag.State, ag.ExitCode)
		}
	}
	// The configured lead came after build:3, the one terminal adopted.
	var worker api.Agent
	a, err = w.as(4).Call(ctx, api.NewRequest(api.Spawn, &api.SpawnBody{Title: "next", Command: []string{"true"}}))
	if err == nil {
		err = a.Decode("Agent", &worker)
	}
	if err != nil || worker.Terminal != 5 {
		t.Errorf("the next worker is build:%d (%v), want build:5", worker.Terminal, err)
	}

	// The app tries to number the flood's windows, and fails each time.
	tried := func() int {
		b, _ := os.ReadFile(rt.Commands)
		return strings.Count(string(b), `"display-message" "-p" "-t" "@1`)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for tried() < 300 {
		if time.Now().After(deadline) {
			t.Fatalf("the app tried %d of the flood's windows in 2 minutes", tried())
		}
		time.Sleep(100 * time.Millisecond)
	}
	logged := log.String()
	if len(logged) > 64<<10 {
		t.Errorf("the app logged %d KB", len(logged)>>10)
	}
	if n := strings.Count(logged, "tmux listed windows the app cannot read"); n != 1 || !strings.Contains(logged, "count=100000") {
		t.Errorf("the unreadable lines were logged %d times, want once with count=100000", n)
	}
	if strings.ContainsAny(logged, "\x1b\x07\x01") {
		t.Error("the log holds raw control characters from the host")
	}
	// Hundreds of the flood's windows were tried and failed: a pass over them, or over a batch
	// of new windows, is one warning; a burst of them, then one every 6 seconds.
	allowed := 20 + int(time.Since(began)/(6*time.Second)) + 1
	if n := strings.Count(logged, `msg="could not number windows"`); n < 1 || n > allowed {
		t.Errorf("%d warnings about %d windows that could not be numbered, want one to %d", n, tried(), allowed)
	}
	if t.Failed() {
		t.Logf("the log (%d bytes), its start:\n%.3000s", len(logged), logged)
	}
}

// TestHostTmuxRefusesAtLength: a host's tmux that refuses to start with a line of 1 MB of escapes,
// every time the app tries, makes a short warning each time, not a megabyte.
func TestHostTmuxRefusesAtLength(t *testing.T) {
	t.Parallel()
	var log apptest.Buffer
	startRogue(t, roguetmux.Options{Refuse: "no " + strings.Repeat("\x1b[2J\x07", 150000)}, &log)
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(log.String(), `msg="environment down" environment=build`) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the environment was not tried 3 times in 60 s:\n%.2000s", log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	logged := log.String()
	if len(logged) > 16<<10 {
		t.Errorf("3 refusals made %d KB of log, want a short line each", len(logged)>>10)
	}
	if !strings.Contains(logged, `tmux on the host: tmux: \"no \\x1b[2J\\a`) {
		t.Errorf("the refusal is not quoted in the log:\n%.2000s", logged)
	}
}

// TestHostListsUnreadableWindows: a host's tmux whose list of where its windows are holds lines
// the app cannot read (no index, an index past any tmux has, an id that is none) does not keep
// the environment down: the app reads the lines it can, the environment comes up, the lead can
// spawn (which looks at where the windows are too), and one warning a listing counts the lines
// left out. Before, one such line failed the attach, for good.
func TestHostListsUnreadableWindows(t *testing.T) {
	t.Parallel()
	var log apptest.Buffer
	w, _ := startRogue(t, roguetmux.Options{
		Listed: `printf '%s\n' 'junk' '@7 99999999999 0' '@x 3 0' '@8 8 0'`,
	}, &log)
	var worker api.Agent
	w.call(w.as(1), api.Spawn, &api.SpawnBody{Title: "next", Command: []string{"true"}}, &worker)
	if worker.Terminal != 2 {
		t.Errorf("the worker is build:%d, want build:2", worker.Terminal)
	}
	if logged := log.String(); !strings.Contains(logged, `msg="tmux listed windows the app cannot read" environment=build count=3`) {
		t.Errorf("the unreadable lines were not counted in a warning:\n%.3000s", logged)
	}
}

// TestHostWindowsListedOnce: adopting 50 windows a person opened, each numbered and moved to the
// window index of its number, lists where the session's windows are once, not once or twice a
// window: over SSH, with a thousand windows, that was megabytes and minutes while Spawn waited.
func TestHostWindowsListedOnce(t *testing.T) {
	t.Parallel()
	const n = 50
	var windows []string
	for i := range n {
		windows = append(windows, fmt.Sprintf("@%d %%%d 0   0 ", 10+i, 10+i))
	}
	var log apptest.Buffer
	w, rt := startRogue(t, roguetmux.Options{Windows: windows, Listed: roguetmux.WindowList(10, n)}, &log)
	if got := len(w.environmentAgents()); got != n+1 {
		t.Fatalf("build has %d terminals, want the %d windows and the lead", got, n)
	}
	b, err := os.ReadFile(rt.Commands)
	if err != nil {
		t.Fatal(err)
	}
	commands := string(b)
	if got := strings.Count(commands, `"list-windows"`); got > 4 {
		t.Errorf("the app listed the windows %d times to adopt %d of them, want a few times whatever their number", got, n)
	}
	// Window @10 was numbered 1, @19 was numbered 10 and went to index 10 once @10 had left it.
	for _, move := range []string{`"move-window" "-d" "-s" "@10" "-t" "build:1"`, `"move-window" "-d" "-s" "@19" "-t" "build:10"`} {
		if !strings.Contains(commands, move) {
			t.Errorf("the app did not move a window to its number: no %s", move)
		}
	}
	if t.Failed() {
		t.Logf("the commands:\n%.4000s", commands)
	}
}
