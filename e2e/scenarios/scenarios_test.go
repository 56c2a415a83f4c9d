//go:build e2e

package scenarios_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/e2e"
	"github.com/krad-ade/krad/internal/version"
)

// threeHosts is scenario 1's world: hosts a and b and a bastion on an outer network, and host c
// on an inner network only, which the bastion is also on.
type threeHosts struct {
	outer, inner     *e2e.Network
	bastion, a, b, c *e2e.Host
}

func (w *threeHosts) hosts() []*e2e.Host { return []*e2e.Host{w.a, w.b, w.c} }

// startThreeHosts starts the world on subnets outerN and innerN, and returns it with the
// ssh_config entries that reach its hosts (c through the bastion, with ProxyJump).
func startThreeHosts(t *testing.T, outerN, innerN int) (*threeHosts, []e2e.SSHEntry) {
	t.Helper()
	w := &threeHosts{outer: e2e.NewNetwork(t, "outer", outerN), inner: e2e.NewNetwork(t, "inner", innerN)}
	w.bastion = e2e.StartHost(t, "bastion", w.outer, w.outer.Addr(10), e2e.HostOptions{
		Also: []e2e.Attachment{{Network: w.inner, Addr: w.inner.Addr(10)}},
	})
	w.a = e2e.StartHost(t, "a", w.outer, w.outer.Addr(11), e2e.HostOptions{})
	w.b = e2e.StartHost(t, "b", w.outer, w.outer.Addr(12), e2e.HostOptions{})
	w.c = e2e.StartHost(t, "c", w.inner, w.inner.Addr(13), e2e.HostOptions{})
	return w, []e2e.SSHEntry{
		{Alias: "bastion", Host: w.bastion},
		{Alias: "a", Host: w.a},
		{Alias: "b", Host: w.b},
		{Alias: "c", Host: w.c, ProxyJump: "bastion"},
	}
}

// warnings logs the app's warnings, such as ssh_config lines it left out.
func warnings(t *testing.T, app *kradApp) {
	t.Helper()
	for _, l := range strings.Split(app.Log.String(), "\n") {
		if strings.Contains(l, "level=WARN") {
			t.Logf("the app warned: %s", l)
		}
	}
}

// Scenario 1: the app, with three SSH environments from the user's ssh_config and known_hosts
// (c only through the bastion), connects all three and says so.
func TestAppConnectsThreeSSHEnvironments(t *testing.T) {
	t.Parallel()
	w, entries := startThreeHosts(t, 30, 31)
	u := newUser(t, entries...)
	u.writeConfig(environments("a", "b", "c"))
	app := u.start()
	for _, h := range w.hosts() {
		c := app.connected(h.Name, 90*time.Second)
		if c.host != h.Name || c.krad != version.Build {
			t.Errorf("environment %s: connected to %q with krad %q, want %s and %s", h.Name, c.host, c.krad, h.Name, version.Build)
		}
		if want := "ssh -t " + h.Name + " 'tmux -S ~/.krad-ade/tmux/krad-ade attach -t " + h.Name + "'"; c.attach != want {
			t.Errorf("environment %s: the attach hint is %q, want %q", h.Name, c.attach, want)
		}
		if got := h.Listeners(t, c.port()); !slices.Equal(got, []string{c.forward}) {
			t.Errorf("host %s: listening on port %s: %q, want %s only", h.Name, c.port(), got, c.forward)
		}
		hostTmux(t, h, "has-session", "-t", h.Name)
		how := "directly"
		if h == w.c {
			how = "through the bastion"
		}
		measured(t, "fresh host %s (%s, krad installed): connected and prepared %s after the app started", h.Name, how, ms(c.after))
	}
	// The app reached c through the bastion: c's sshd sees the bastion's inner address.
	peers := w.c.Exec(t, "ss", "-Htn", "state", "established", "sport = :22")
	inner, _ := w.bastion.AddrOn(w.inner)
	if !strings.Contains(peers, inner.String()+":") {
		t.Errorf("host c: the SSH connections come from %q, want the bastion's inner address %v", peers, inner)
	}
	warnings(t, app)
}

// Scenario 2: on each host the app installed the static krad; a terminal there runs krad api and
// krad list through the tunnel, has no KRAD_ADE_TOKEN, and its token file is owner-only; the
// token is in no process's argv or environment on any host.
func TestRemoteTerminalsRunKradThroughTheTunnel(t *testing.T) {
	t.Parallel()
	w, entries := startThreeHosts(t, 32, 33)
	u := newUser(t, entries...)
	u.writeConfig(environments("a", "b", "c") + leadOn("a"))
	app := u.start()
	conns := map[string]connection{}
	for _, h := range w.hosts() {
		conns[h.Name] = app.connected(h.Name, 90*time.Second)
	}
	tok := u.readAPI().Token
	terms := map[string]*term{
		"a": findTerminal(t, w.a, "a", "a:1", 30*time.Second), // the lead
		"b": openTerminal(t, w.b, "b", 30*time.Second),        // tmux new-window run on the host
		"c": openAttached(t, u, w.c, "c", 30*time.Second),     // prefix c, attached with the app's hint
	}
	varLine := regexp.MustCompile(`(?m)^(KRAD_ADE_[A-Z_]+)=(.*)$`)
	for _, h := range w.hosts() {
		t.Run(h.Name, func(t *testing.T) {
			c, tm := conns[h.Name], terms[h.Name]

			// The static krad, installed at the version-pinned path, runs there.
			if out := h.ExecAs(t, "krad", kradBin()+"/krad", "version"); !strings.Contains(out, version.Build) {
				t.Errorf("%s/krad version: %q", kradBin(), out)
			}
			if out := h.Exec(t, "stat", "-c", "%a %U %n", kradBin()+"/krad", kradBin()+"/krad-ade-agents"); strings.Count(out, "755 krad ") != 2 {
				t.Errorf("the installed programs: %q, want both 755 and krad's", out)
			}

			// The terminal's variables: the forward, its number, the token's file, no token.
			vars := map[string]string{}
			for _, m := range varLine.FindAllStringSubmatch(tm.mustRun(t, "env | grep '^KRAD_ADE_' | sort"), -1) {
				vars[m[1]] = m[2]
			}
			// A terminal the app opened (the lead, a:1) has its own askpass key too (32 hex
			// digits), which proves its prompts; one opened by hand (b, c) has none.
			tokenFile := vars["KRAD_ADE_TOKEN_FILE"]
			key, keyed := vars["KRAD_ADE_ASKPASS_KEY"]
			if byApp := h.Name == "a"; vars["KRAD_ADE_ENDPOINT"] != c.forward || vars["KRAD_ADE_TERMINAL"] != tm.id ||
				!regexp.MustCompile(`^/home/krad/\.krad-ade/run/[^/]+/token$`).MatchString(tokenFile) ||
				keyed != byApp || keyed && !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(key) || len(vars) != 3+len(key)/32 {
				t.Errorf("terminal %s's variables: %q; want KRAD_ADE_ENDPOINT=%s, KRAD_ADE_TERMINAL=%s, KRAD_ADE_TOKEN_FILE under ~/.krad-ade/run, KRAD_ADE_ASKPASS_KEY in the app's terminals alone, nothing else",
					tm.id, vars, c.forward, tm.id)
			}
			// krad is the installed one, its folder first on PATH. (If not, the checks after this
			// one go on with the installed krad by its path.)
			krad := "krad"
			if out, rc := tm.run(t, "command -v krad", time.Minute); rc != 0 || out != kradBin()+"/krad" {
				path, _ := tm.run(t, `echo "$PATH"`, time.Minute)
				t.Errorf("terminal %s: command -v krad said %q (exit %d), want %s/krad: its PATH is %s", tm.id, out, rc, kradBin(), path)
				krad = kradBin() + "/krad"
			}
			out, rc := tm.run(t, "env | grep KRAD_ADE_TOKEN=", time.Minute)
			if rc != 1 || out != "" {
				t.Errorf("terminal %s: env | grep KRAD_ADE_TOKEN= found %q (exit %d), want nothing", tm.id, out, rc)
			}

			// krad api and krad list, through the tunnel.
			start := time.Now()
			hello := tm.mustRun(t, krad+" api")
			if want := fmt.Sprintf("agents API v%d · build %s · pid %d · %s (found through KRAD_ADE_ENDPOINT)", api.Version, version.Build, app.PID(), c.forward); hello != want {
				t.Errorf("terminal %s: krad api said %q, want %q", tm.id, hello, want)
			}
			t.Logf("terminal %s: krad api, typed and read back: %s", tm.id, ms(time.Since(start)))
			role := "shell"
			if tm.id == "a:1" {
				role = "lead"
			}
			list := tm.mustRun(t, krad+" list")
			if !strings.HasPrefix(list, "TERMINAL  ROLE") || !regexp.MustCompile(`(?m)^`+tm.id+`\s+`+role+`\s`).MatchString(list) {
				t.Errorf("terminal %s: krad list said\n%s\nwant its own row as a %s", tm.id, list, role)
			}

			// The token file: 0600 in a 0700 folder, both krad's, holding the bus token.
			if tokenFile == "" {
				t.Fatal("no KRAD_ADE_TOKEN_FILE")
			}
			modes := h.Exec(t, "stat", "-c", "%a %U %F", tokenFile, tokenFile[:strings.LastIndex(tokenFile, "/")])
			if modes != "600 krad regular file\n700 krad directory\n" {
				t.Errorf("token file and its folder: %q, want 600 and 700, krad's", modes)
			}
			if got := strings.TrimSpace(h.Exec(t, "cat", tokenFile)); got != tok {
				t.Errorf("the token file does not hold the token of api.json")
			}
			if strings.Contains(tm.screen(t), tok) {
				t.Errorf("terminal %s shows the token", tm.id)
			}
		})
	}

	// With a krad running on b (a watch, as a status bar would), no process on any host has the
	// token in its argv or environment.
	if out := terms["b"].mustRun(t, kradBin()+"/krad watch >/dev/null 2>&1 & sleep 1; kill -0 $!"); out != "" {
		t.Logf("krad watch on b: %s", out)
	}
	for _, h := range append(w.hosts(), w.bastion) {
		scanProcesses(t, h, tok)
	}
	terms["b"].mustRun(t, "kill %1")
}

// Scenario 3: a lead on host a spawns a worker there, sends it text, waits for it and reads its
// screen, all typed into the lead's terminal; a Client on this machine watches both.
func TestLeadSpawnsAWorkerOnTheHost(t *testing.T) {
	t.Parallel()
	s := oneHost(t, 34, singleOptions{watch: true})
	watch, lead := s.watch, s.lead

	out := lead.mustRun(t, `krad spawn --title w -- sh -c 'read x; echo got $x; sleep 1; exit 0'`)
	m := regexp.MustCompile(`^a:(\d+) worker 'w' (starting|working)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("krad spawn said %q, want \"a:N worker 'w' working\"", out)
	}
	n, id := m[1], "a:"+m[1]
	if out := lead.mustRun(t, "krad send "+n+" hello"); out != "" {
		t.Errorf("krad send said %q", out)
	}
	start := time.Now()
	if out := lead.mustRun(t, "krad wait "+n+" --timeout 1m"); out != id+" worker 'w' done (0)" {
		t.Errorf("krad wait said %q, want %q", out, id+" worker 'w' done (0)")
	}
	t.Logf("krad wait returned after %s (the worker sleeps 1 s after its answer)", ms(time.Since(start)))
	if out := lead.mustRun(t, "krad read "+n); !strings.Contains(out, "got hello") {
		t.Errorf("krad read %s said\n%s\nwant the worker's \"got hello\"", n, out)
	}

	// The Client saw the lead, then the worker added, working and done.
	leadSeen := func(e watchEvent) bool {
		for _, ag := range e.agents {
			if ag.ID().String() == "a:1" && ag.Role == api.RoleLead {
				return true
			}
		}
		return e.agent != nil && e.agent.Agent.ID().String() == "a:1" && e.agent.Agent.Role == api.RoleLead
	}
	watch.waitFor(0, 10*time.Second, "the lead a:1", leadSeen)
	_, added := watch.waitFor(0, 10*time.Second, "the worker added", agentIn(id, api.AgentAdded, ""))
	if ag := added.agent.Agent; ag.Role != api.RoleWorker || ag.Title != "w" || ag.Session != "a:1" {
		t.Errorf("the worker as added: %+v, want a worker titled w in session a:1", ag)
	}
	iWorking, _ := watch.waitFor(0, 10*time.Second, "the worker working", agentIn(id, "", api.StateWorking))
	_, done := watch.waitFor(iWorking, 10*time.Second, "the worker done after working", agentIn(id, api.AgentChanged, api.StateDone))
	if ec := done.agent.Agent.ExitCode; ec == nil || *ec != 0 {
		t.Errorf("the worker done with exit code %v, want 0", ec)
	}
}

// Scenario 4: the forward listens on the host's loopback only; the host's own address on that
// port is refused, from another container and from this machine.
func TestForwardListensOnTheHostsLoopbackOnly(t *testing.T) {
	t.Parallel()
	s := oneHost(t, 35, singleOptions{noLead: true})
	a, c := s.a, s.c
	peer := e2e.StartHost(t, "peer", s.lan, s.lan.Addr(12), e2e.HostOptions{})

	if got := a.Listeners(t, c.port()); !slices.Equal(got, []string{"127.0.0.1:" + c.port()}) {
		t.Errorf("host a listens on port %s at %q, want 127.0.0.1 only", c.port(), got)
	}
	dial := func(from *e2e.Host, addr, port string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, _ := from.Command(ctx, "krad", "timeout", "10", "bash", "-c",
			fmt.Sprintf(`exec 3<>/dev/tcp/%s/%s && echo open`, addr, port)).CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	if got := dial(a, "127.0.0.1", c.port()); got != "open" {
		t.Errorf("host a to its own 127.0.0.1:%s: %q, want open", c.port(), got)
	}
	if got := dial(peer, a.Addr.String(), "22"); got != "open" {
		t.Fatalf("peer to a's sshd: %q, want open (the network must work for the next check to mean anything)", got)
	}
	if got := dial(peer, a.Addr.String(), c.port()); !strings.Contains(got, "Connection refused") {
		t.Errorf("peer to %v:%s: %q, want Connection refused", a.Addr, c.port(), got)
	}
	if got := dial(a, a.Addr.String(), c.port()); !strings.Contains(got, "Connection refused") {
		t.Errorf("host a to its own %v:%s: %q, want Connection refused", a.Addr, c.port(), got)
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(a.Addr.String(), c.port()), 10*time.Second)
	if err == nil {
		conn.Close()
		t.Errorf("this machine reached %v:%s", a.Addr, c.port())
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("this machine to %v:%s: %v, want connection refused", a.Addr, c.port(), err)
	}
}

// Scenario 8 (the hosts the app must refuse): a host without tmux, one whose sshd forbids
// forwarding and one whose sshd has GatewayPorts yes are each refused with the clear error, in
// the app's log and as environment_state AppEvents; a plain host beside them works.
func TestHostsTheAppRefuses(t *testing.T) {
	t.Parallel()
	lan := e2e.NewNetwork(t, "lan", 39)
	good := e2e.StartHost(t, "good", lan, lan.Addr(10), e2e.HostOptions{})
	noTmux := e2e.StartHost(t, "notmux", lan, lan.Addr(11), e2e.HostOptions{WithoutTmux: true})
	closed := e2e.StartHost(t, "closed", lan, lan.Addr(12), e2e.HostOptions{SSHDConfig: []string{"AllowTcpForwarding no"}})
	open := e2e.StartHost(t, "open", lan, lan.Addr(13), e2e.HostOptions{SSHDConfig: []string{"GatewayPorts yes"}})
	u := newUser(t,
		e2e.SSHEntry{Alias: "good", Host: good},
		e2e.SSHEntry{Alias: "notmux", Host: noTmux},
		e2e.SSHEntry{Alias: "closed", Host: closed},
		e2e.SSHEntry{Alias: "open", Host: open},
	)
	u.writeConfig(environments("good", "notmux", "closed", "open") + "[[terminal]]\nenvironment = \"good\"\n")
	app := u.start()
	watch := u.watch()
	c := app.connected("good", 60*time.Second)

	for _, tc := range []struct {
		env    string
		state  string   // how the status starts
		says   []string // what the error must say
		stdout string   // the line at start that says it is not up, after "is not up yet: "
	}{
		{"notmux", "retrying in ", []string{"tmux is not installed on the host", "apt-get install tmux"}, `(retrying in |connecting \(after: ).*tmux is not installed on the host`},
		{"closed", "failed: ", []string{"does not allow remote port forwarding", "AllowTcpForwarding no"}, `failed: .*AllowTcpForwarding no`},
		{"open", "failed: ", []string{"not bound to loopback only", "GatewayPorts yes", "set GatewayPorts no"}, `failed: .*GatewayPorts yes`},
	} {
		line := app.logHas(60*time.Second, append([]string{"environment=" + tc.env, "status=\"" + tc.state}, tc.says...)...)
		t.Logf("the app's log on %s: %s", tc.env, line)
		ok := func(msg string) bool {
			if !strings.HasPrefix(msg, tc.state) {
				return false
			}
			for _, s := range tc.says {
				if !strings.Contains(msg, s) {
					return false
				}
			}
			return true
		}
		// The failures that are final may come before the watch subscribed: an AppEvent is
		// required when the watch saw the environment's state before that.
		if i, _ := watch.find(0, envState(tc.env, func(string) bool { return true })); i >= 0 || tc.state == "retrying in " {
			_, e := watch.waitFor(0, 30*time.Second, tc.env+"'s environment_state with the error", envState(tc.env, ok))
			t.Logf("AppEvent: environment %s: %s", tc.env, e.app.Message)
		} else {
			t.Logf("the watch subscribed after %s's state was final; the log says it", tc.env)
		}
		app.WaitLine(30*time.Second, regexp.MustCompile(`^krad-ade: environment `+tc.env+` is not up yet: `+tc.stdout))
	}
	// The refused forward on open was closed at once.
	line := app.logHas(time.Second, "environment=open", "it listens on 0.0.0.0:")
	if m := regexp.MustCompile(`it listens on 0\.0\.0\.0:(\d+)`).FindStringSubmatch(line); m != nil {
		if got := open.Listeners(t, m[1]); len(got) > 0 {
			t.Errorf("host open still listens on the refused forward's port: %q", got)
		}
	}
	// The plain host works beside them.
	tm := findTerminal(t, good, "good", "good:1", 30*time.Second)
	if out := tm.mustRun(t, "krad api"); !strings.Contains(out, c.forward) {
		t.Errorf("krad api on good said %q", out)
	}
	if out, _, code := u.krad("list"); code != 0 || !strings.Contains(out, "good:1") {
		t.Errorf("krad list on this machine: exit %d:\n%s", code, out)
	}
}

// Scenario 10: the app stopped with SIGTERM removes its token files from every host and its
// forwards go; killed with SIGKILL and started again, it replaces api.json, rewrites the hosts'
// token files with the new token at the same paths, and the remote terminals that survived in
// tmux work again.
func TestAppStopsCleanlyAndComesBackAfterAKill(t *testing.T) {
	t.Parallel()
	lan := e2e.NewNetwork(t, "lan", 41)
	a := e2e.StartHost(t, "a", lan, lan.Addr(11), e2e.HostOptions{})
	b := e2e.StartHost(t, "b", lan, lan.Addr(12), e2e.HostOptions{})
	hosts := []*e2e.Host{a, b}
	u := newUser(t, e2e.SSHEntry{Alias: "a", Host: a}, e2e.SSHEntry{Alias: "b", Host: b})
	u.writeConfig(environments("a", "b") + leadOn("a"))

	// The first run: fresh hosts.
	app := u.start()
	first := map[string]connection{}
	for _, h := range hosts {
		first[h.Name] = app.connected(h.Name, 60*time.Second)
		measured(t, "fresh host %s (krad installed): connected and prepared %s after the app started", h.Name, ms(first[h.Name].after))
	}
	lead := findTerminal(t, a, "a", "a:1", 30*time.Second)
	lead.mustRun(t, "krad list")
	files := map[string]string{}
	for _, h := range hosts {
		f := tokenFiles(t, h)
		if len(f) != 1 {
			t.Fatalf("host %s: token files %q, want one", h.Name, f)
		}
		files[h.Name] = f[0]
	}

	// SIGTERM: a clean stop.
	code, took := app.stop(syscall.SIGTERM)
	measured(t, "SIGTERM to exit (token files removed from 2 hosts): %s", ms(took))
	if code != 0 {
		t.Errorf("krad-ade exited %d after SIGTERM, want 0", code)
	}
	if _, err := os.Stat(u.apiJSON()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("api.json after a clean stop: %v, want removed", err)
	}
	for _, h := range hosts {
		if exists(t, h, files[h.Name]) {
			t.Errorf("host %s: the token file %s is still there after a clean stop", h.Name, files[h.Name])
		}
		if got := h.Listeners(t, first[h.Name].port()); len(got) > 0 {
			t.Errorf("host %s: the forward's port %s still listens after a clean stop: %q", h.Name, first[h.Name].port(), got)
		}
	}
	if hostTmux(t, a, "display-message", "-p", "-t", lead.window, "#{@krad_terminal}") != "a:1\n" {
		t.Errorf("host a: the lead's window did not outlive the app")
	}

	// A second run finds the hosts prepared; then it is killed.
	app = u.start()
	for _, h := range hosts {
		c := app.connected(h.Name, 60*time.Second)
		measured(t, "prepared host %s (krad already there, tmux running): connected %s after the app started", h.Name, ms(c.after))
		if c.forward != first[h.Name].forward {
			t.Logf("host %s: the second run's forward is %s, the first's was %s", h.Name, c.forward, first[h.Name].forward)
		}
	}
	killed := u.readAPI()
	app.stop(syscall.SIGKILL)
	if _, err := os.Stat(u.apiJSON()); err != nil {
		t.Errorf("api.json after SIGKILL: %v, want it left behind", err)
	}

	// The third run, after the kill.
	app = u.start()
	third := map[string]connection{}
	for _, h := range hosts {
		third[h.Name] = app.connected(h.Name, 60*time.Second)
		measured(t, "prepared host %s after a SIGKILL: connected %s after the app started", h.Name, ms(third[h.Name].after))
	}
	now := u.readAPI()
	if now.PID != app.PID() || now.Token == killed.Token || now.Endpoint != app.Bus {
		t.Errorf("api.json was not replaced: pid %d (the app's %d), endpoint %s (the app's %s), same token: %v",
			now.PID, app.PID(), now.Endpoint, app.Bus, now.Token == killed.Token)
	}
	for _, h := range hosts {
		f := tokenFiles(t, h)
		if !slices.Equal(f, []string{files[h.Name]}) {
			t.Errorf("host %s: token files %q, want the same path as before, %s", h.Name, f, files[h.Name])
			continue
		}
		if got := strings.TrimSpace(h.Exec(t, "cat", f[0])); got != now.Token {
			t.Errorf("host %s: the token file does not hold the new token", h.Name)
		}
	}
	for _, h := range hosts {
		if third[h.Name].forward != first[h.Name].forward {
			t.Errorf("host %s: the forward is now %s, was %s when the surviving terminals were opened: the port was free, and it was not asked for again",
				h.Name, third[h.Name].forward, first[h.Name].forward)
		}
	}
	// The lead survived in tmux, with its number; its krad reads the new token from the same
	// file.
	again := findTerminal(t, a, "a", "a:1", 30*time.Second)
	if again.window != lead.window {
		t.Errorf("the lead is now window %s, was %s", again.window, lead.window)
	}
	again.seq = lead.seq
	out, rc := again.run(t, "krad list", time.Minute)
	if rc != 0 || !regexp.MustCompile(`(?m)^a:1\s+lead\s`).MatchString(out) {
		vars, _ := again.run(t, "env | grep '^KRAD_ADE_ENDPOINT='", time.Minute)
		t.Errorf("krad list typed into the surviving lead after the restart exited %d:\n%s\n(the lead's %s; the app's forward on a is now %s)",
			rc, out, vars, third["a"].forward)
	}
}
