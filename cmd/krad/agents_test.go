//go:build unix

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// buildAgents builds the executable as krad-ade-agents into a temporary folder.
func buildAgents(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the executable")
	}
	path := filepath.Join(t.TempDir(), "krad-ade-agents")
	if out, err := exec.Command("go", "build", "-o", path, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return path
}

// printTerminal is a $SHELL that prints the KRAD_ADE_TERMINAL it was started with, and its
// argv[0].
func printTerminal(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shell")
	script := "#!/bin/sh\necho \"KRAD_ADE_TERMINAL=${KRAD_ADE_TERMINAL-unset} argv0=$0 args=$#\"\n"
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestShellExecs runs krad-ade-agents shell for real: it becomes $SHELL.
func TestShellExecs(t *testing.T) {
	agents := buildAgents(t)
	shell := printTerminal(t)

	t.Run("KRAD_ADE_TERMINAL set", func(t *testing.T) {
		cmd := exec.Command(agents, "shell")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SHELL=" + shell, "KRAD_ADE_TERMINAL=main:4"}
		out, err := cmd.Output()
		if want := "KRAD_ADE_TERMINAL=main:4 argv0=" + shell + " args=0\n"; err != nil || string(out) != want {
			t.Errorf("got %q, %v; want %q", out, err, want)
		}
	})

	t.Run("numbered by the app through tmux", func(t *testing.T) {
		tmux := testbin.Need(t, "tmux", "tmux")
		socket := filepath.Join(t.TempDir(), "tmux.sock")
		start := exec.Command(tmux, "-S", socket, "-f", "/dev/null", "new-session", "-d", "-s", "t", "sleep 600")
		start.Env = append(os.Environ(), "TMUX=")
		if out, err := start.CombinedOutput(); err != nil {
			t.Fatalf("tmux new-session: %v\n%s", err, out)
		}
		defer exec.Command(tmux, "-S", socket, "kill-server").Run()
		pane, err := exec.Command(tmux, "-S", socket, "display-message", "-p", "-t", "t", "#{pane_id}").Output()
		if err != nil {
			t.Fatal(err)
		}
		if err := exec.Command(tmux, "-S", socket, "set-option", "-w", "-t", "t", "@krad_terminal", "main:7").Run(); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(agents, "shell")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SHELL=" + shell, "TMUX=" + socket + ",1,0", "TMUX_PANE=" + strings.TrimSpace(string(pane))}
		out, err := cmd.Output()
		if want := "KRAD_ADE_TERMINAL=main:7 argv0=" + shell + " args=0\n"; err != nil || string(out) != want {
			t.Errorf("got %q, %v; want %q", out, err, want)
		}
	})
}

// TestRunExecBecomesTheCommand: krad-ade-agents run --exec leaves no process of its own: the
// process it was is the command's (its pid, its exit status, the signal that kills it), and
// outside the app it warns once and runs the command all the same.
func TestRunExecBecomesTheCommand(t *testing.T) {
	agents := buildAgents(t)
	t.Run("its pid and exit status", func(t *testing.T) {
		cmd := exec.Command(agents, "run", "--exec", "--title", "t", "--", "sh", "-c", `echo "$$"; exit 7`)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, _ := cmd.Output()
		if want := fmt.Sprintf("%d\n", cmd.Process.Pid); string(out) != want || cmd.ProcessState.ExitCode() != 7 {
			t.Errorf("got %q and exit code %d; want the command's pid %q (krad-ade-agents' own) and its exit code 7", out, cmd.ProcessState.ExitCode(), want)
		}
		if want := "krad-ade-agents: warning: KRAD_ADE_TERMINAL is not set, so this is not one of krad-ade's terminals: the command runs without state reports\n"; stderr.String() != want {
			t.Errorf("got stderr %q, want %q", stderr.String(), want)
		}
	})
	t.Run("a signal kills the command itself", func(t *testing.T) {
		cmd := exec.Command(agents, "run", "--exec", "--", "sh", "-c", `kill -TERM $$`)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		_ = cmd.Run()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Errorf("got %v, want the process killed by SIGTERM (which tmux tells the app, as 128+15)", cmd.ProcessState)
		}
	})
}

// TestRunForwardsSignals: SIGTERM sent to krad-ade-agents run reaches its command, whose exit
// code it exits with; with --exec, krad-ade-agents is the command, which gets it itself.
func TestRunForwardsSignals(t *testing.T) {
	agents := buildAgents(t)
	// Run under nohup, this process ignores SIGHUP, and so would the programs it starts: the
	// command's shell would refuse its trap of HUP (POSIX: a signal ignored on entry to a
	// non-interactive shell cannot be trapped). Caught here, it is the default in them, as it is
	// in tmux's windows.
	if signal.Ignored(syscall.SIGHUP) {
		caught := make(chan os.Signal, 1)
		signal.Notify(caught, syscall.SIGHUP)
		t.Cleanup(func() { signal.Stop(caught) })
	}
	for _, tt := range []struct {
		sig   syscall.Signal
		flags []string
	}{{syscall.SIGTERM, nil}, {syscall.SIGHUP, nil}, {syscall.SIGTERM, []string{"--exec"}}, {syscall.SIGHUP, []string{"--exec"}}} {
		sig := tt.sig
		t.Run(strings.Join(append([]string{sig.String()}, tt.flags...), " "), func(t *testing.T) {
			args := append(append([]string{"run"}, tt.flags...), "--", "sh", "-c", `trap "echo got it; exit 7" TERM HUP; echo ready; while :; do sleep 0.05; done`)
			cmd := exec.Command(agents, args...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			// Its own process group, so that the signal goes to krad-ade-agents alone, as
			// kill(1) would send it.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(stdout)
			if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
				t.Fatalf("got %q, %v; want ready", line, err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var rest string
			done := make(chan error, 1)
			go func() {
				rest, _ = r.ReadString('\n')
				done <- cmd.Wait()
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
				t.Fatal("krad-ade-agents run did not end after the signal")
			}
			if code := cmd.ProcessState.ExitCode(); code != 7 || rest != "got it\n" {
				t.Errorf("got exit code %d and %q; want 7 and the command's trap", code, rest)
			}
		})
	}
}
