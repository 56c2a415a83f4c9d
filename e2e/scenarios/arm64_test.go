//go:build e2e

package scenarios_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// Issue 16, arm64 executed: the app prepares an arm64 host, a container whose every program (sshd,
// the shell, tmux, krad) is an arm64 one run under qemu-user emulation (e2e.Emulate registers
// Debian's qemu-user-static with binfmt_misc, or the test is skipped with the reason). The probe's
// uname -m says aarch64, the app installs krad-linux-arm64 (not this machine's build) and runs it
// there, and the lead's terminal on the host uses the bus: krad list, spawn, wait, read.
//
// What emulation does not carry: qemu-user translates only a few netlink families and refuses
// NETLINK_SOCK_DIAG (EPROTONOSUPPORT), which listenowner asks first for the owner of the bus's
// port. The test checks that the refusal is what happens here, so that it knows which path it
// proves: krad on the host then reads /proc/net/tcp, and still refuses another user's listener
// (exit 2, nothing sent). On real arm64 hardware sock_diag answers, as on amd64.
func TestAppPreparesAnArm64Host(t *testing.T) {
	t.Parallel()
	armKrad := testbin.Static(t, "arm64") // beside the app: it installs krad-linux-ARCH
	s := oneHost(t, 50, singleOptions{arch: "arm64", watch: true})
	a, app, c, lead, watch := s.a, s.app, s.c, s.lead, s.watch
	measured(t, "arm64 host (emulated) connected and prepared %s after the app's start", ms(c.after))

	// The probe: uname -s -m on the host, as the app runs it.
	if got := strings.TrimSpace(a.ExecAs(t, "krad", "uname", "-s", "-m")); got != "Linux aarch64" {
		t.Fatalf("uname -s -m on host a says %q, want Linux aarch64: the host is not arm64", got)
	}
	// The arm64 build installed, whole, and checked there: the app ran krad version --json on the
	// host before it said the host was ready.
	t.Logf("the app's log: %s", app.logHas(10*time.Second, "host ready", "platform=linux/arm64", "krad="+kradBin()))
	want, err := os.ReadFile(armKrad)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := elf.NewFile(bytes.NewReader(want)); err != nil || f.Machine != elf.EM_AARCH64 {
		t.Fatalf("%s is not an arm64 executable (%v)", armKrad, err)
	}
	wantSum := sha256.Sum256(want)
	for _, name := range []string{"krad", "krad-ade-agents"} {
		got := strings.Fields(a.ExecAs(t, "krad", "sha256sum", kradBin()+"/"+name))
		if len(got) == 0 || got[0] != hex.EncodeToString(wantSum[:]) {
			t.Errorf("%s/%s on the host has SHA-256 %q, want the arm64 build's %x", kradBin(), name, got, wantSum)
		}
	}

	// The lead's terminal on the host: its shell and krad are arm64 programs.
	if out := lead.mustRun(t, "uname -m; command -v krad"); out != "aarch64\n"+kradBin()+"/krad" {
		t.Errorf("in the lead: uname -m; command -v krad said %q, want aarch64 and %s/krad", out, kradBin())
	}
	if out := lead.mustRun(t, "krad list"); !regexp.MustCompile(`(?m)^a:1\s+lead\b`).MatchString(out) {
		t.Errorf("krad list in the lead said\n%s\nwant a:1, the lead", out)
	}
	out := lead.mustRun(t, `krad spawn --title w -- sh -c 'read x; echo got $x; exit 0'`)
	m := regexp.MustCompile(`^a:(\d+) worker 'w' (starting|working)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("krad spawn said %q, want \"a:N worker 'w' working\"", out)
	}
	n, id := m[1], "a:"+m[1]
	if out := lead.mustRun(t, "krad send "+n+" hello"); out != "" {
		t.Errorf("krad send said %q", out)
	}
	if out := lead.mustRun(t, "krad wait "+n+" --timeout 2m"); out != id+" worker 'w' done (0)" {
		t.Errorf("krad wait said %q, want %q", out, id+" worker 'w' done (0)")
	}
	if out := lead.mustRun(t, "krad read "+n); !strings.Contains(out, "got hello") {
		t.Errorf("krad read %s said\n%s\nwant the worker's \"got hello\"", n, out)
	}
	watch.waitFor(0, 30*time.Second, "the worker done", agentIn(id, "", api.StateDone))

	// What emulation changes: sock_diag, asked by an arm64 program on the host.
	probe := hostProbe(t, a)
	diag := strings.TrimSpace(a.ExecAs(t, "krad", probe, "sockdiag"))
	switch {
	case diag == "refused: protocol not supported":
		t.Logf("under qemu-user, NETLINK_SOCK_DIAG is refused (%s): krad's listener check on this host reads /proc/net/tcp", diag)
	case diag == "open":
		t.Logf("this qemu-user translates NETLINK_SOCK_DIAG: krad's listener check took the sock_diag path")
	default:
		t.Errorf("probe sockdiag said %q", diag)
	}
	// The check still refuses another user's listener: other listens on a loopback port of the
	// host, and the lead's krad pointed at it sends no token.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sq := a.Command(ctx, "other", probe, "squat", "-addr", "127.0.0.1:0")
	stdout, err := sq.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sq.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = sq.Wait() })
	var mu sync.Mutex
	var said []string
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			mu.Lock()
			said = append(said, sc.Text())
			mu.Unlock()
			if addr, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				listening <- addr
			}
		}
	}()
	var addr string
	select {
	case addr = <-listening:
	case <-time.After(time.Minute):
		t.Fatal("user other could not listen on the host's loopback")
	}
	out, rc := lead.run(t, "KRAD_ADE_ENDPOINT="+addr+" krad list", 2*time.Minute)
	if rc != 2 || !strings.Contains(out, "belongs to uid 1001, not you (uid 1000)") || !strings.Contains(out, "the token was not sent") {
		t.Errorf("krad list in the lead, pointed at other's listener %s, exited %d:\n%s\nwant 2 and the refusal", addr, rc, out)
	}
	conns := squatterUntouched(t, &mu, &said)
	t.Logf("krad list against other's listener: exit %d: %s; the squatter: %q", rc, out, conns)
}
