//go:build e2e

package scenarios_test

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/e2e"
)

// keepalive makes a dead connection noticed within 2 s × 3 instead of ssh's 15 s × 3, so that a
// scenario's cut is noticed well within its length.
var keepalive = []string{"ServerAliveInterval 2", "ServerAliveCountMax 3"}

const keepaliveBound = 2 * 3 * time.Second

func connectedState(env string) func(watchEvent) bool {
	return envState(env, func(m string) bool { return strings.HasPrefix(m, "connected: ") })
}

func notConnectedState(env string) func(watchEvent) bool {
	return envState(env, func(m string) bool { return !strings.HasPrefix(m, "connected: ") })
}

var tickLine = regexp.MustCompile(`(?m)^tick (\d+)$`)

// lastTick is the last "tick N" on a screen.
func lastTick(screen string) int {
	m := tickLine.FindAllStringSubmatch(screen, -1)
	if len(m) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	return n
}

// spawnTicker has the lead spawn a worker that prints "tick N" every second, and returns it.
func spawnTicker(t *testing.T, lead *term, env string) *term {
	t.Helper()
	out := lead.mustRun(t, `krad spawn --title ticker -- sh -c 'i=0; while [ $i -lt 900 ]; do i=$((i+1)); echo tick $i; sleep 1; done'`)
	m := regexp.MustCompile(`^` + env + `:(\d+) worker 'ticker' `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("krad spawn said %q", out)
	}
	return findTerminal(t, lead.h, env, env+":"+m[1], 30*time.Second)
}

// Scenario 5: host a is cut off its network for 30 s. The worker keeps running in tmux; the app
// notices within the keepalive bound, reconnects by itself once the network is back, gets the
// same port, and the same terminals' krad works again with no user action. Each step is timed.
func TestNetworkCutHealsOnTheSamePort(t *testing.T) {
	t.Parallel()
	s := oneHost(t, 36, singleOptions{ssh: keepalive, watch: true})
	lan, a, app, watch, c, lead := s.lan, s.a, s.app, s.watch, s.c, s.lead
	worker := spawnTicker(t, lead, "a")
	lead.mustRun(t, "krad api")
	tokenFile := lead.mustRun(t, "printenv KRAD_ADE_TOKEN_FILE")

	from := watch.count()
	cut := time.Now()
	a.Disconnect(t, lan)
	ticksAtCut := lastTick(worker.screen(t))
	measured(t, "network cut: docker network disconnect took %s", ms(time.Since(cut)))
	_, lost := watch.waitFor(from, 30*time.Second, "a state of a other than connected after the cut", notConnectedState("a"))
	noticed := lost.at.Sub(cut)
	measured(t, "network cut: the app noticed after %s (keepalive bound %s): %q", ms(noticed), keepaliveBound, lost.app.Message)
	if noticed > keepaliveBound+3*time.Second {
		t.Errorf("the app noticed the cut after %s, want within the keepalive bound %s (and a little)", ms(noticed), keepaliveBound)
	}
	time.Sleep(time.Until(cut.Add(30 * time.Second)))

	// From inside the host, krad api as the lead's terminal would run it, again and again until
	// it answers: the first success is when the tunnel works again.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	poll := a.Command(ctx, "krad", "bash", "-c",
		`until timeout 0.3 env KRAD_ADE_ENDPOINT="$1" KRAD_ADE_TOKEN_FILE="$2" KRAD_ADE_TERMINAL=a:1 "$3"/krad api >/dev/null 2>&1; do sleep 0.02; done; date +%s%N`,
		"bash", c.forward, tokenFile, kradBin())
	var polled bytes.Buffer
	poll.Stdout = &polled
	if err := poll.Start(); err != nil {
		t.Fatal(err)
	}
	from = watch.count()
	restoring := time.Now()
	a.Connect(t, lan)
	restored := time.Now()
	measured(t, "network back after %s: docker network connect took %s", ms(restoring.Sub(cut)), ms(restored.Sub(restoring)))
	if err := poll.Wait(); err != nil {
		t.Fatalf("krad api on the host never answered again: %v; the app's log:\n%s", err, app.Log)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(polled.String()), 10, 64)
	if err != nil {
		t.Fatalf("the poll said %q", polled.String())
	}
	measured(t, "network back: first successful remote krad api %s after docker network connect returned", ms(time.Unix(0, ns).Sub(restored)))
	_, back := watch.waitFor(from, 60*time.Second, "a connected again", connectedState("a"))
	measured(t, "network back: the app said connected %s after docker network connect returned", ms(back.at.Sub(restored)))
	if want := "connected: " + c.forward + " on the host"; back.app.Message != want {
		t.Errorf("after the cut: %q, want the same port, %q", back.app.Message, want)
	}
	if got := a.Listeners(t, c.port()); !slices.Equal(got, []string{c.forward}) {
		t.Errorf("host a listens on port %s at %q, want %s once", c.port(), got, c.forward)
	}
	t.Logf("what the app said meanwhile:\n%s", appEvents(watch, "a"))

	// The same terminals, no user action: the lead's krad works, the worker kept running. (The
	// app saw no output from it during the cut, so it may have called it idle; its output once
	// the app is back makes it working again.)
	if out := lead.mustRun(t, "krad api"); !strings.Contains(out, c.forward) {
		t.Errorf("krad api in the lead after the cut said %q", out)
	}
	_, working := watch.waitFor(from, 10*time.Second, worker.id+" working after the cut", func(e watchEvent) bool {
		return agentIn(worker.id, "", api.StateWorking)(e) && e.at.After(back.at.Add(-time.Second))
	})
	t.Logf("%s working again %s after the app said connected", worker.id, ms(working.at.Sub(back.at)))
	if out := lead.mustRun(t, "krad list"); !regexp.MustCompile(`(?m)^` + worker.id + `\s+worker\s+working\s+screen\s+ticker$`).MatchString(out) {
		t.Errorf("krad list in the lead after the cut said\n%s\nwant %s working", out, worker.id)
	}
	if now := lastTick(worker.screen(t)); now < ticksAtCut+25 {
		t.Errorf("the worker printed tick %d at the cut and tick %d now, 30 s later: it did not keep running", ticksAtCut, now)
	} else {
		t.Logf("the worker went on from tick %d to tick %d", ticksAtCut, now)
	}
}

// appEvents is the environment_state messages of env the watch saw, with their times.
func appEvents(w *watcher, env string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, e := range w.events {
		if e.app != nil && e.app.Environment == env {
			b.WriteString(e.at.Format("15:04:05.000") + " " + e.app.Kind + " " + e.app.Message + "\n")
		}
	}
	return b.String()
}

// Scenario 6: host b restarts (docker restart: every process ends, its homes on tmpfs come back
// empty, so krad and the token file are gone). The app reconnects, installs what is missing,
// writes the token file again, and a new terminal works.
func TestHostRestartReinstalls(t *testing.T) {
	t.Parallel()
	lan := e2e.NewNetwork(t, "lan", 37)
	b := e2e.StartHost(t, "b", lan, lan.Addr(12), e2e.HostOptions{HomeOnTmpfs: true})
	u := newUser(t, e2e.SSHEntry{Alias: "b", Host: b, Options: keepalive})
	u.writeConfig(environments("b"))
	app := u.start()
	watch := u.watch()
	c := app.connected("b", 60*time.Second)
	before := openTerminal(t, b, "b", 30*time.Second)
	before.mustRun(t, kradBin()+"/krad api")
	files := tokenFiles(t, b)
	tok := u.readAPI().Token

	from := watch.count()
	start := time.Now()
	b.Restart(t)
	restarted := time.Now()
	measured(t, "host restart: docker restart took %s", ms(restarted.Sub(start)))
	_, back := watch.waitFor(from, 90*time.Second, "b connected again", connectedState("b"))
	measured(t, "host restart: the app connected and prepared b again (krad reinstalled) %s after docker restart returned", ms(back.at.Sub(restarted)))
	watch.waitFor(from, 30*time.Second, "b down", func(e watchEvent) bool {
		return e.app != nil && e.app.Kind == api.EnvironmentDown && e.app.Environment == "b"
	})
	_, up := watch.waitFor(from, 60*time.Second, "b up again", func(e watchEvent) bool {
		return e.app != nil && e.app.Kind == api.EnvironmentUp && e.app.Environment == "b"
	})
	measured(t, "host restart: environment b up again %s after docker restart returned", ms(up.at.Sub(restarted)))
	t.Logf("what the app said meanwhile:\n%s", appEvents(watch, "b"))
	if back.app.Message != "connected: "+c.forward+" on the host" {
		t.Logf("after the restart: %q (before: %s)", back.app.Message, c.forward)
	}

	if out := b.ExecAs(t, "krad", kradBin()+"/krad", "version"); !strings.Contains(out, "krad ") {
		t.Errorf("krad version on b after the restart: %q", out)
	}
	if got := tokenFiles(t, b); !slices.Equal(got, files) {
		t.Errorf("token files after the restart: %q, want %q", got, files)
	} else if got := strings.TrimSpace(b.Exec(t, "cat", got[0])); got != tok {
		t.Errorf("the token file after the restart does not hold the token")
	}
	// The terminal from before is gone with the host's tmux; a new one works.
	watch.waitFor(from, 30*time.Second, before.id+" closed", func(e watchEvent) bool {
		return e.agent != nil && e.agent.Agent.ID().String() == before.id && (e.agent.Kind == api.AgentRemoved || e.agent.Agent.State == api.StateClosed)
	})
	tm := openTerminal(t, b, "b", 30*time.Second)
	addr, _, _ := strings.Cut(strings.TrimPrefix(back.app.Message, "connected: "), " ")
	if out := tm.mustRun(t, kradBin()+"/krad api"); !strings.Contains(out, addr) {
		t.Errorf("krad api in a new terminal said %q, want the forward %s", out, addr)
	}
	if out := tm.mustRun(t, kradBin()+"/krad list"); !regexp.MustCompile(`(?m)^` + tm.id + `\s+shell\s`).MatchString(out) {
		t.Errorf("krad list in a new terminal said\n%s", out)
	}
}

// Scenario 7: host c is replaced by a new machine at the same address, with a new host key. The
// app refuses it with both fingerprints, sends nothing else, and does not try again.
func TestChangedHostKeyIsRefused(t *testing.T) {
	t.Parallel()
	lan := e2e.NewNetwork(t, "lan", 38)
	c := e2e.StartHost(t, "c", lan, lan.Addr(13), e2e.HostOptions{})
	u := newUser(t, e2e.SSHEntry{Alias: "c", Host: c, Options: keepalive})
	u.writeConfig(environments("c"))
	app := u.start()
	watch := u.watch()
	app.connected("c", 60*time.Second)
	old := slices.Clone(c.HostKeys())

	from := watch.count()
	start := time.Now()
	c.Replace(t)
	replaced := time.Now()
	_, refused := watch.waitFor(from, 60*time.Second, "c failed", envState("c", func(m string) bool { return strings.HasPrefix(m, "failed: ") }))
	msg := refused.app.Message
	measured(t, "host key changed: refused %s after the old host was removed (a new one at its address was up %s after)", ms(refused.at.Sub(start)), ms(replaced.Sub(start)))
	t.Logf("AppEvent: %s", msg)
	if !strings.Contains(msg, "has changed") || !strings.Contains(msg, u.ssh.KnownHosts+":") {
		t.Errorf("the refusal %q does not say the key changed and where known_hosts has the old one", msg)
	}
	var oldFP, newFP bool
	for _, k := range old {
		oldFP = oldFP || strings.Contains(msg, k.Fingerprint)
	}
	for _, k := range c.HostKeys() {
		newFP = newFP || strings.Contains(msg, k.Fingerprint)
	}
	if !oldFP || !newFP {
		t.Errorf("the refusal %q lacks the old fingerprint (%v) or the new one (%v)", msg, oldFP, newFP)
	}
	app.logHas(5*time.Second, "environment=c", "status=\"failed: host key of", "has changed")

	// Nothing else went to the new host: no authentication, nothing installed, no token file.
	time.Sleep(5 * time.Second)
	if exists(t, c, "/home/krad/.krad-ade") {
		t.Errorf("the app put ~/.krad-ade on the host whose key it refused")
	}
	out, err := exec.Command("docker", "logs", c.Container).CombinedOutput()
	if err != nil {
		t.Fatalf("docker logs: %v: %s", err, out)
	}
	if strings.Contains(string(out), "Accepted") || strings.Contains(string(out), "publickey") {
		t.Errorf("the new host's sshd saw an authentication:\n%s", out)
	}
	if i, e := watch.find(from, envState("c", func(m string) bool { return strings.HasPrefix(m, "connecting") })); i >= 0 && e.at.After(refused.at) {
		t.Errorf("the app tried c again after refusing its key: %q", e.app.Message)
	}
	t.Logf("the new host's sshd log:\n%s", out)
}

// Scenario 9: after the app's forward on host a is gone (the network cut, then the stale sshd
// session ended), user other binds the forwarded port. The static krad in the lead's terminal
// refuses to send the token to it. When the network is back the app takes another port and says
// so; a new terminal gets it.
func TestSquattedPortGetsNoToken(t *testing.T) {
	t.Parallel()
	s := oneHost(t, 40, singleOptions{ssh: keepalive, watch: true})
	lan, a, app, watch, c, lead := s.lan, s.a, s.app, s.watch, s.c, s.lead
	lead.mustRun(t, "krad api")
	squat := hostProbe(t, a)

	from := watch.count()
	a.Disconnect(t, lan)
	watch.waitFor(from, 30*time.Second, "the app noticing the cut", notConnectedState("a"))
	// The host's sshd has not noticed: its session still holds the port. End it, as sshd would
	// once it noticed.
	// (ss -p cannot say which process holds it: sshd's session is not dumpable, and root in a
	// container has no CAP_SYS_PTRACE. The app's connection is krad's only sshd session there.)
	pids := strings.Fields(a.Exec(t, "sh", "-c", "pgrep -u krad '^sshd' || true"))
	if len(pids) == 0 {
		t.Fatalf("no sshd session of krad's on a after the cut; port %s: %q", c.port(), a.Listeners(t, c.port()))
	}
	a.Exec(t, append([]string{"kill"}, pids...)...)
	deadline := time.Now().Add(10 * time.Second)
	for len(a.Listeners(t, c.port())) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("port %s still held on a after its sshd session was ended", c.port())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Another user of the host takes the port.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sq := a.Command(ctx, "other", squat, "squat", "-addr", c.forward)
	out, err := sq.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sq.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = sq.Wait() })
	var mu sync.Mutex
	var said []string
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			said = append(said, sc.Text())
			mu.Unlock()
			if strings.HasPrefix(sc.Text(), "listening ") {
				close(listening)
			}
		}
	}()
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatalf("user other could not listen on %s", c.forward)
	}
	if got := a.Exec(t, "ss", "-Hltne", "sport = :"+c.port()); !strings.Contains(got, "uid:1001") {
		t.Errorf("port %s is not other's: %q", c.port(), got)
	}

	for _, cmd := range []string{"krad api", "krad list"} {
		out, rc := lead.run(t, cmd, time.Minute)
		if rc != 2 || !strings.Contains(out, "belongs to uid 1001, not you (uid 1000)") || !strings.Contains(out, "the token was not sent") {
			t.Errorf("%s in the lead, with other's listener on its endpoint, exited %d:\n%s\nwant 2 and the refusal", cmd, rc, out)
		}
		t.Logf("%s in the lead: exit %d: %s", cmd, rc, out)
	}
	conns := squatterUntouched(t, &mu, &said)
	t.Logf("the squatter: %q", conns)

	// The network back: the app's port is taken, so it takes another and says so.
	from = watch.count()
	a.Connect(t, lan)
	_, back := watch.waitFor(from, 60*time.Second, "a connected again", connectedState("a"))
	t.Logf("after the network came back: %s", back.app.Message)
	if strings.HasPrefix(back.app.Message, "connected: "+c.forward+" on the host") {
		t.Errorf("connected again on %s, which other holds", c.forward)
	}
	if !strings.Contains(back.app.Message, "the port changed from "+c.forward) {
		t.Errorf("the AppEvent %q does not say the port changed", back.app.Message)
	}
	t.Logf("the app's log: %s", app.logHas(5*time.Second, "old port is taken"))
	tm := openTerminal(t, a, "a", 30*time.Second)
	addr, _, _ := strings.Cut(strings.TrimPrefix(back.app.Message, "connected: "), " ")
	if out := tm.mustRun(t, kradBin()+"/krad api"); !strings.Contains(out, addr) {
		t.Errorf("krad api in a new terminal said %q, want the new forward %s", out, addr)
	}
}

// Another user of the host listening on the forward's port beside it, on [::] (IPv6 only) and
// on the host's LAN address, cannot switch the environment off: when the connection is lost, the
// app reconnects on the same port (the other listeners take nothing sent to 127.0.0.1) and the
// lead's krad keeps working. It used to fail for good, as if the host's sshd had GatewayPorts yes.
func TestOtherUsersListenersBesideTheForward(t *testing.T) {
	t.Parallel()
	s := oneHost(t, 43, singleOptions{ssh: keepalive, watch: true})
	lan, a, watch, c, lead := s.lan, s.a, s.watch, s.c, s.lead
	lead.mustRun(t, "krad api")

	squat := hostProbe(t, a)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, l := range []struct{ network, addr string }{
		{"tcp6", "[::]:" + c.port()},
		{"tcp", lan.Addr(11).String() + ":" + c.port()},
	} {
		sq := a.Command(ctx, "other", squat, "squat", "-network", l.network, "-addr", l.addr)
		out, err := sq.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := sq.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); _ = sq.Wait() })
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.HasPrefix(line, "listening ") {
			t.Fatalf("user other could not listen on %s (%s): %q, %v", l.addr, l.network, line, err)
		}
	}
	if got := a.Listeners(t, c.port()); len(got) != 3 {
		t.Fatalf("port %s is held at %q, want the forward and other's two", c.port(), got)
	}

	// The connection is lost (its sshd session ended, as a host that noticed a dead peer would
	// end it): the app reconnects at once and asks for its port again.
	from := watch.count()
	pids := strings.Fields(a.Exec(t, "sh", "-c", "pgrep -u krad '^sshd' || true"))
	if len(pids) == 0 {
		t.Fatal("no sshd session of krad's on a")
	}
	a.Exec(t, append([]string{"kill"}, pids...)...)
	_, lost := watch.waitFor(from, 30*time.Second, "the app noticing the loss", notConnectedState("a"))
	t.Logf("after the loss: %s", lost.app.Message)
	_, back := watch.waitFor(from, 60*time.Second, "a connected or failed", envState("a", func(m string) bool {
		return strings.HasPrefix(m, "connected: ") || strings.HasPrefix(m, "failed: ")
	}))
	if want := "connected: " + c.forward + " on the host"; back.app.Message != want {
		t.Fatalf("after the loss, beside other's listeners: %q, want %q", back.app.Message, want)
	}
	if out := lead.mustRun(t, "krad api"); !strings.Contains(out, c.forward) {
		t.Errorf("krad api in the lead after the reconnect said %q", out)
	}
}

// squatterUntouched checks what the squatter (another user's listener, its lines in said after
// the first) reported of the connections made to it: at least one, each with 0 bytes read, so
// that the refusal proves the token was not sent. It returns those lines.
func squatterUntouched(t *testing.T, mu *sync.Mutex, said *[]string) []string {
	t.Helper()
	time.Sleep(2500 * time.Millisecond) // the squatter reads each connection for up to 2 s
	mu.Lock()
	conns := slices.Clone((*said)[1:])
	mu.Unlock()
	if len(conns) == 0 {
		t.Errorf("the squatter was never dialed: the refusal proves nothing")
	}
	for _, l := range conns {
		if !strings.HasSuffix(l, ": 0 bytes") {
			t.Errorf("the squatter got data: %s", l)
		}
	}
	return conns
}
