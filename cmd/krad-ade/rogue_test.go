package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/roguetmux"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// TestCompromisedHostTmux is the attack on the real krad-ade: the SSH host's tmux (a
// program first on the host user's PATH) floods %window-add for 300,000 windows it then lists,
// and shows six windows whose @krad holds 3 MB of control characters each. krad-ade's peak memory
// (VmHWM, from /proc) stays far from the 837 MB the flood once took; krad list and krad watch on
// this computer, through api.json, keep working, and krad watch says that build reached its
// limit of terminals; the log stays short.
func TestCompromisedHostTmux(t *testing.T) {
	huge := strings.Repeat(`\u0001`, 500000)
	var windows []string
	for i := range 6 {
		windows = append(windows, fmt.Sprintf(`@%d %%%d 0   0 {"terminal":%d,"title":"t","role":"shell","session":"%s"}`, 10+i, 10+i, 10+i, huge))
	}
	rt := roguetmux.Write(t, t.TempDir(), roguetmux.Options{
		Windows: windows,
		Flood:   roguetmux.WindowAdds(1000, 300000),
		Listed:  roguetmux.WindowList(1000, 300000),
	})
	w := newSSHWorldEnv(t, []string{"PATH=" + rt.Bin + ":/usr/local/bin:/usr/bin:/bin"}, "")
	w.write(filepath.Join(w.home, ".ssh", "known_hosts"), w.sshd.KnownHostsLine(0)+"\n")
	w.start()
	bin := testbin.Dir(t)
	krad := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "krad"), args...)
		cmd.Env = baseEnv(bin, w.home)
		return cmd
	}

	// krad watch, from before the flood.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch := krad(ctx, "watch")
	out, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var watchErr apptest.Buffer // read on the failure path while krad watch may still write it
	watch.Stderr = &watchErr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	limit := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "environment build terminal_limit: ") {
				limit <- sc.Text()
			}
		}
	}()

	deadline := time.Now().Add(3 * time.Minute)
	for {
		if _, err := os.Stat(rt.Flooded); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the host's tmux did not flood within 3 minutes; the log:\n%.3000s", w.app.Log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case line := <-limit:
		if !strings.Contains(line, "1000 terminals") {
			t.Errorf("krad watch says %q", line)
		}
	case <-time.After(5 * time.Minute):
		// The test is about a bounded app that stays right under the flood, not about its speed:
		// under the race detector, on a 2-core machine twice as slow as the last, numbering the
		// 1,000 windows took past 2 minutes (889 and 908 of them at 2 minutes, runs 25 and 26).
		t.Errorf("krad watch never said that build reached its limit; its stderr: %.2000s", watchErr.String())
	}

	peak := vmHWM(t, w.app.PID())
	t.Logf("krad-ade's peak resident memory: %d MB", peak>>20)
	if peak > 300<<20 {
		t.Errorf("krad-ade peaked at %d MB of resident memory under the flood, want a bounded amount (under 300 MB)", peak>>20)
	}

	lctx, lcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer lcancel()
	list := krad(lctx, "list")
	var stdout, stderr bytes.Buffer
	list.Stdout, list.Stderr = &stdout, &stderr
	if err := list.Run(); err != nil {
		t.Fatalf("krad list: %v\n%s", err, stderr.String())
	}
	if n := strings.Count(stdout.String(), "\nbuild:"); n != 1000 {
		t.Errorf("krad list shows %d terminals of build, want 1000", n)
	}
	if n := stdout.Len(); n > 1<<20 {
		t.Errorf("krad list printed %d KB", n>>10)
	}
	if strings.Contains(stdout.String(), "\x01") {
		t.Error("krad list printed the host's control characters")
	}
	if n := len(w.app.Log.String()); n > 64<<10 {
		t.Errorf("krad-ade logged %d KB", n>>10)
	}
}

// vmHWM is a process's peak resident set size, from Linux's /proc.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}
