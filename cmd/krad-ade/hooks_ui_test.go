package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// TestUINeedsYou: an agent that comes to need the person is said as a person at the app's
// screen sees it. The lead spawns Claude Code from a profile with kind = "claude" (the fake
// agent of kradtest/fakeagent, with its hooks), which asks for a permission: its row says
// needs_input!, that the state was reported, and the agent's message; the status line says it
// needs you; the UI's terminal gets the desktop notification (OSC 9, as what the UI wrote to the
// pane shows), and notify-send is run with it. The settings show notify, and n turns it off in
// config.toml.
func TestUINeedsYou(t *testing.T) {
	agents := testbin.FakeAgents(t)
	stub := t.TempDir()
	sentFile := filepath.Join(stub, "sent")
	// notify-send stands for the desktop, which this machine has not: it records what it got.
	script := "#!/bin/sh\nprintf '%s|' \"$@\" >> " + sentFile + "\necho >> " + sentFile + "\n"
	if err := os.WriteFile(filepath.Join(stub, "notify-send"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	config := `[[agent]]
name = "c"
command = "` + filepath.Join(agents, "claude") + `"
kind = "claude"

[[terminal]]
title = "lead"
lead = true
command = "krad spawn --title asker --agent c --prompt ask; sleep 600"
`
	bin := testbin.Dir(t)
	s := startScreen(t, 120, 40, config, []string{"PATH=" + stub + ":" + bin + ":/usr/local/bin:/usr/bin:/bin"})
	wrote := filepath.Join(t.TempDir(), "pane-output")
	if out, err := s.tmux("pipe-pane", "-o", "-t", "ui", "cat >> "+wrote).CombinedOutput(); err != nil {
		t.Fatalf("pipe-pane: %v: %s", err, out)
	}

	text, _ := s.waitFor(`main:2 +worker +needs_input! +reported .*asker · Claude needs your permission`)
	if !strings.Contains(text, "main:2 needs you: Claude needs your permission to use Bash") || !strings.Contains(text, "FROM") {
		t.Errorf("the screen does not say it:\n%s", text)
	}
	const osc = "\x1b]9;main:2 needs you: Claude needs your permission to use Bash\x07"
	waitFileHolds(t, wrote, osc)
	waitFileHolds(t, sentFile, "--app-name=krad-ade|--|main:2 needs you|Claude needs your permission to use Bash|")

	s.keys("s")
	s.waitFor(`\[x\] Desktop notifications when an agent needs you \(notify\)`)
	s.keys("n")
	s.waitFor(`\[ \] Desktop notifications when an agent needs you \(notify\)`)
	if b, _ := os.ReadFile(filepath.Join(s.home, "krad-ade", "config.toml")); !strings.HasPrefix(string(b), "notify = false\n") || !strings.Contains(string(b), config) {
		t.Errorf("config.toml after n:\n%s", b)
	}
}

// waitFileHolds waits until the file at path holds want.
func waitFileHolds(t *testing.T, path, want string) {
	t.Helper()
	for deadline := time.Now().Add(uiPatience); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), want) {
			return
		}
	}
	b, _ := os.ReadFile(path)
	t.Fatalf("%s never held %q: %q", path, want, b)
}
