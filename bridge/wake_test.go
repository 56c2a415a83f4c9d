package bridge_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
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

	"github.com/krad-ade/krad/kradtest/netnstest"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// wakeCut is how long the network stays cut in the wake tests: a short sleep of a laptop, or a
// Wi-Fi that drops, longer than the check after the change needs to find the connections dead.
const wakeCut = 4 * time.Second

// TestNetworkCutHealsEveryHost: the hosts are in a network of their own (a namespace, whose link
// to this computer the test takes down, as a laptop's Wi-Fi goes): every environment is back, on
// the port it had, soon after the link comes back, though their keepalives (15 s × 3, ssh's
// default) alone would take 45 s to notice the loss; the local environment's terminal is
// answered throughout.
func TestNetworkCutHealsEveryHost(t *testing.T) {
	t.Parallel()
	n := netnstest.New(t)
	f := newFleet(t, fleetOptions{hosts: 4, host: sshdtest.Options{Netns: n.Name, Listen: n.There}})
	f.up(2 * time.Minute)
	before := f.ports()
	f.allThrough(before, time.Minute, n.Dial)
	w := wake(t, f, n)
	t.Logf("all %d back %s after the link; the local terminal's %d requests answered, the slowest in %s", len(f.names), w.heal, w.answered, w.slowest)
	// Well under the 45 s the keepalives would take: the change of the network was seen.
	if w.heal > 30*time.Second {
		t.Errorf("the environments took %s to come back after the network did", w.heal)
	}
	if after := f.ports(); !mapsEqual(after, before) {
		t.Errorf("the forwards moved: before %v, after %v", before, after)
	}
}

// wake cuts the fleet's network for wakeCut, restores it, and returns the time from the link's
// return until every environment answered through its forward on its old port, with the local
// terminal's slowest answer over the whole time. A local request that fails fails the test.
func wake(t testing.TB, f *fleet, n *netnstest.Net) (w woken) {
	t.Helper()
	before := f.ports()
	stop := f.answered()
	n.Cut(t)
	time.Sleep(wakeCut)
	untrace := traceHeal(t)
	app0, all0 := cpuTimes(t)
	n.Restore(t)
	back := time.Now()
	last := f.allThrough(before, 2*time.Minute, n.Dial)
	app1, all1 := cpuTimes(t)
	untrace()
	w.heal, w.appCPU, w.allCPU = last.Sub(back), app1-app0, all1-all0
	var failures []string
	w.slowest, w.answered, failures = stop()
	if len(failures) > 0 {
		t.Errorf("%d of the local terminal's %d requests failed while the hosts were away: %s", len(failures), w.answered, failures[0])
	}
	return w
}

// traceHeal, for a look at where a heal's CPU goes, records the whole computer over the heal
// when asked to by the environment, and returns what ends the recording:
//
//	KRAD_PERF_OUT=FILE: perf record -e cpu-clock -a -g into FILE; then
//	  perf report -i FILE --sort comm -g none --stdio
//	KRAD_ACCT_OUT=FILE: process accounting (accton) into FILE; then sa -a -c -i FILE
//
// Either needs root, and perf (linux-perf) or accton (acct) installed.
func traceHeal(t testing.TB) (untrace func()) {
	t.Helper()
	var stops []func()
	if out := os.Getenv("KRAD_ACCT_OUT"); out != "" {
		if err := os.WriteFile(out, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command("accton", out).CombinedOutput(); err != nil {
			t.Fatalf("accton %s: %v: %s", out, err, b)
		}
		stops = append(stops, func() { _ = exec.Command("accton", "off").Run() })
	}
	if out := os.Getenv("KRAD_PERF_OUT"); out != "" {
		p := exec.Command("perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "-a", "-g", "-o", out)
		if err := p.Start(); err != nil {
			t.Fatalf("perf record: %v", err)
		}
		time.Sleep(300 * time.Millisecond) // perf's own start, before the heal it is to see
		stops = append(stops, func() { _ = p.Process.Signal(os.Interrupt); _ = p.Wait() })
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}

// woken is what wake measured: the heal, the local terminal's slowest answer and how many it
// got, and the CPU time the heal took, the app's (this process's) and all of this computer's
// (which runs the hosts' sshd, shells and tmux too).
type woken struct {
	heal, slowest, appCPU, allCPU time.Duration
	answered                      int
}

// cpuTimes is the CPU time this process has used, and all of this computer's processors
// together (user, nice, system, irq), from Linux's /proc.
func cpuTimes(t testing.TB) (self, all time.Duration) {
	t.Helper()
	tick := func(n string) time.Duration {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			t.Fatalf("read /proc: %q is not a number", n)
		}
		return time.Duration(v) * time.Second / 100 // USER_HZ
	}
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc/self/stat:", err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	self = tick(f[11]) + tick(f[12]) // utime, stime: fields 14 and 15
	sys, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Skip("no /proc/stat:", err)
	}
	cpu := strings.Fields(strings.SplitN(string(sys), "\n", 2)[0])
	for _, n := range cpu[1:8] { // user nice system idle iowait irq softirq
		all += tick(n)
	}
	all -= tick(cpu[4]) + tick(cpu[5]) // not idle, not iowait
	return self, all
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestBastionRestartHealsTheHostsBehindIt: hosts reached through a ProxyJump bastion, whose sshd
// dies (every session with it) and comes back a few seconds later: every environment is back,
// on its old port, with no restart of the app.
func TestBastionRestartHealsTheHostsBehindIt(t *testing.T) {
	t.Parallel()
	jump := sshdtest.Start(t, sshdtest.Options{Config: []string{"MaxSessions 100"}})
	f := newFleet(t, fleetOptions{hosts: 5, jump: jump})
	f.up(2 * time.Minute)
	heal := bastionRestart(t, f, jump)
	t.Logf("all %d back %s after the bastion", len(f.names), heal)
}

// bastionRestart kills the fleet's bastion, brings it back after a pause, and returns the time
// from its return until every environment answered through its forward on its old port.
func bastionRestart(t testing.TB, f *fleet, jump *sshdtest.Server) time.Duration {
	t.Helper()
	before := f.ports()
	f.allThrough(before, time.Minute, nil)
	jump.Kill()
	time.Sleep(3 * time.Second)
	if err := jump.Restart(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	return f.allThrough(before, 2*time.Minute, nil).Sub(back)
}

// Run with:
//
//	go test -run '^$' -bench 'Wake|Bastion' -benchtime 1x -timeout 30m ./bridge
//
// BenchmarkWake: N hosts (20, 100), each an sshd of its own in one network namespace, all
// connected; the namespace's link to this computer goes down for 4 s (every host's network cut
// at the same moment) and comes back. heal-s is the time from the link's return until every
// environment answered a Hello through its forward on its old port; local-max-ms the slowest
// answer to the local terminal's Lists, one every 20 ms from the cut to the end. The baselines
// in the same run: N autossh (-M 0, ssh -R on fixed ports, ServerAliveInterval 1 × 3,
// ConnectTimeout 2, ExitOnForwardFailure) to the same hosts, cut and restored the same way,
// until a round trip goes through every forward again (autossh-heal-s); and N `ssh -N -R`
// started at once to the same hosts with the network up, until each has its port
// (ssh-R-allup-s): the floor of any SSH reconnect on this machine, whose cores run the hosts'
// sshd too. heal-app-cpu-s is the CPU time the app (this process) used from the link's return to
// the last environment back, heal-all-cpu-s that of every processor here, which also runs the
// hosts' sshd, shells and tmux. Keepalives are ssh's defaults for the app (15 s × 3): what brings
// it back at once is the kernel's word that the network changed.
func BenchmarkWake(b *testing.B) {
	for _, n := range []int{20, 100} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			nt := netnstest.New(b)
			f := newFleet(b, fleetOptions{hosts: n, host: sshdtest.Options{Netns: nt.Name, Listen: nt.There}})
			f.up(5 * time.Minute)
			f.allThrough(f.ports(), time.Minute, nt.Dial)
			w := wake(b, f, nt)
			f.cancel()
			f.running.Wait()
			// The floor of any SSH reconnect here: N bare handshakes and forwards at once.
			bare := sshRAll(b, f, echoListener(b))
			base := autosshWake(b, f, nt)
			for range b.N {
			}
			b.ReportMetric(w.heal.Seconds(), "heal-s")
			b.ReportMetric(w.appCPU.Seconds(), "heal-app-cpu-s")
			b.ReportMetric(w.allCPU.Seconds(), "heal-all-cpu-s")
			b.ReportMetric(float64(w.slowest)/float64(time.Millisecond), "local-max-ms")
			b.ReportMetric(base.Seconds(), "autossh-heal-s")
			b.ReportMetric(bare.Seconds(), "ssh-R-allup-s")
		})
	}
}

// BenchmarkBastionRestart: 20 hosts behind one ProxyJump bastion, which is killed and comes back
// after 3 s; heal-s is from its return until every environment answered through its old port.
func BenchmarkBastionRestart(b *testing.B) {
	jump := sshdtest.Start(b, sshdtest.Options{Config: []string{"MaxSessions 100"}})
	f := newFleet(b, fleetOptions{hosts: 20, jump: jump})
	f.up(5 * time.Minute)
	heal := bastionRestart(b, f, jump)
	for range b.N {
	}
	b.ReportMetric(heal.Seconds(), "heal-s")
}

// autosshWake is the baseline of BenchmarkWake: an autossh for each of the fleet's hosts, each
// forwarding a fixed port there to an echo server here; the network cut and restored as wake
// does it; the time from the link's return until a round trip goes through every forward.
func autosshWake(b *testing.B, f *fleet, n *netnstest.Net) time.Duration {
	autossh, err := exec.LookPath("autossh")
	if err != nil {
		b.Skip("autossh is not installed (apt-get install autossh)")
	}
	echo := echoListener(b)
	var cmds []*exec.Cmd
	defer func() {
		for _, c := range cmds {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			_ = c.Wait()
		}
	}()
	ports := make([]string, len(f.names))
	for i, name := range f.names {
		ports[i] = "127.0.0.1:" + strconv.Itoa(20000+i)
		cmd := exec.Command(autossh, "-M", "0", "-N", "-F", f.config,
			// Its best settings: without a ConnectTimeout, an ssh whose connect began while the
			// network was down waits out TCP's SYN retries (about 130 s, seen on Linux 6.18).
			"-o", "ExitOnForwardFailure=yes", "-o", "ServerAliveInterval=1", "-o", "ServerAliveCountMax=3", "-o", "ConnectTimeout=2", "-o", "BatchMode=yes",
			"-R", ports[i]+":"+echo, name)
		cmd.Env = append(os.Environ(), "AUTOSSH_GATETIME=0", "SSH_AUTH_SOCK=")
		log, err := os.Create(filepath.Join(b.TempDir(), name+".log"))
		if err != nil {
			b.Fatal(err)
		}
		cmd.Stderr = log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // autossh and its ssh, killed together
		err = cmd.Start()
		log.Close()
		if err != nil {
			b.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	allEcho := func(d time.Duration) time.Time {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var last time.Time
		var failed []string
		deadline := time.Now().Add(d)
		for _, p := range ports {
			wg.Go(func() {
				for {
					if echoThrough(n, p) == nil {
						mu.Lock()
						if now := time.Now(); now.After(last) {
							last = now
						}
						mu.Unlock()
						return
					}
					if time.Now().After(deadline) {
						mu.Lock()
						failed = append(failed, p)
						mu.Unlock()
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		if len(failed) > 0 {
			slices.Sort(failed)
			b.Fatalf("autossh: no round trip through %d forwards within %s: %s", len(failed), d, strings.Join(failed, " "))
		}
		return last
	}
	allEcho(2 * time.Minute)
	n.Cut(b)
	time.Sleep(wakeCut)
	n.Restore(b)
	back := time.Now()
	return allEcho(5 * time.Minute).Sub(back)
}

// echoListener serves lines back to whoever sends them, until the test ends; it returns its
// address.
func echoListener(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// echoThrough sends a line to addr on the hosts' side and waits for it to come back.
func echoThrough(n *netnstest.Net, addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := n.Dial(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "ping\n" {
		return fmt.Errorf("got %q back", line)
	}
	return nil
}
