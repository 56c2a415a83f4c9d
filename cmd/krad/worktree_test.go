//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/worktree"
)

// TestWorktreeCancelled: krad-ade-agents worktree, stopped while Create runs git, by SIGTERM,
// by SIGHUP, or by the reader of its stdout going away (an SSH session closed), stops git and
// leaves nothing of the group: no worktree, no branch, no folder.
func TestWorktreeCancelled(t *testing.T) {
	agents := buildAgents(t)
	for _, how := range []string{"SIGTERM", "SIGHUP", "reader gone"} {
		t.Run(how, func(t *testing.T) {
			git := testbin.SlowGit(t)
			repo := t.TempDir()
			for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first"}} {
				if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			root := t.TempDir()
			op, _ := json.Marshal(worktree.Op{Op: worktree.OpCreate, Dir: repo, Root: root, Create: &worktree.CreateOptions{Name: "slow"}})

			cmd := exec.Command(agents, "worktree")
			cmd.Env = []string{"PATH=" + git + ":/usr/bin:/bin", "HOME=" + t.TempDir()}
			cmd.Stdin = strings.NewReader(string(op))
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout = w
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			defer cmd.Process.Kill()
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(git, "waiting")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("git worktree add did not start within 20 s; stderr: %s", stderr.String())
				}
			}

			done := make(chan error, 1)
			var line string
			switch how {
			case "reader gone":
				r.Close()
				go func() { done <- cmd.Wait() }()
			default:
				sig := map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGHUP": syscall.SIGHUP}[how]
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				go func() {
					l, _ := bufio.NewReader(r).ReadString('\n')
					line = l
					done <- cmd.Wait()
				}()
			}
			select {
			case err := <-done:
				if how != "reader gone" && err != nil {
					t.Errorf("exit: %v, want 0 (the Result says what happened); stderr: %s", err, stderr.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("krad-ade-agents worktree still runs 20 s after %s", how)
			}
			if how != "reader gone" {
				var res worktree.Result
				if err := json.Unmarshal([]byte(line), &res); err != nil || res.Error == nil || !strings.Contains(res.Error.Message, "context canceled") {
					t.Errorf("stdout %q (%v): want a Result whose error says the operation was cancelled", line, err)
				}
			}

			// Nothing of the group is left, and nothing runs.
			out, err := exec.Command("git", "-C", repo, "worktree", "list", "--porcelain").Output()
			if err != nil || strings.Count(string(out), "worktree ") != 1 {
				t.Errorf("git worktree list: %v\n%s\nwant the main checkout only", err, out)
			}
			if out, _ := exec.Command("git", "-C", repo, "branch", "--list", "krad/slow").Output(); len(out) != 0 {
				t.Errorf("branch krad/slow is left: %q", out)
			}
			if left, _ := filepath.Glob(filepath.Join(root, "*", "slow")); len(left) != 0 {
				t.Errorf("the group's folder is left: %v", left)
			}
			for deadline := time.Now().Add(5 * time.Second); len(processesWith(t, git)) > 0; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Errorf("git still runs 5 s later: pids %v", processesWith(t, git))
					break
				}
			}
		})
	}
}

// processesWith lists the pids of the processes whose command line holds s.
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []string
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), s) {
			pids = append(pids, filepath.Base(filepath.Dir(f)))
		}
	}
	return pids
}
