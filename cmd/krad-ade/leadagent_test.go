package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// TestLeadsThatAreAgents: a lead can be an agent of a profile with a kind, and then tells its own
// state as a worker spawned from that profile does, in each of the three ways a person names a
// lead: a [[terminal]] with agent = "c", krad-ade --lead-agent c, and the UI's new-lead form (n)
// with c in its agent field. The profile is Claude Code's (kradtest/fakeagent, with its hooks):
// each lead's row says idle, reported (its session's start), where a lead of a plain command
// says screen; the form's lead, asked for a permission, is needs_input with its message, which
// the status line says. The person's own ~/.claude/settings.json is the same byte for byte after,
// and the hook it names ran. A form naming no profile is told so, and opens nothing.
func TestLeadsThatAreAgents(t *testing.T) {
	agents := testbin.FakeAgents(t)
	home := t.TempDir()
	marker := filepath.Join(home, "persons-hook-ran")
	settings := filepath.Join(home, ".claude", "settings.json")
	persons := []byte(`{"model": "opus", "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo started >> ` + marker + `"}]}]}}` + "\n")
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, persons, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, "krad-ade"), 0o700); err != nil {
		t.Fatal(err)
	}
	config := `[[agent]]
name = "c"
command = "` + filepath.Join(agents, "claude") + `"
kind = "claude"

[[terminal]]
title = "configured"
agent = "c"
lead = true

[[terminal]]
title = "plain"
command = "sleep 600"
lead = true
`
	if err := os.WriteFile(filepath.Join(home, "krad-ade", "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startScreenIn(t, home, "", 120, 40, nil, "--lead-agent", "c")

	s.waitFor(`main:1 +lead +idle +reported .*configured`)
	s.waitFor(`main:2 +lead +\S+ +screen .*plain`)
	s.waitFor(`main:3 +lead +idle +reported .*\bc\b`)

	// The form: a profile no one has is refused by the app, which names those there are.
	s.keys("n")
	s.waitFor(`New lead`)
	s.keys("nobody", "Tab", "Tab", "Tab", "Tab", "nope", "Enter")
	s.waitFor(`error: bad_request: no agent nope: the agents are c \(\[\[agent\]\] in config.toml\)`)
	s.keys("n")
	s.waitFor(`New lead`)
	s.keys("formed", "Tab", "Tab", "Tab", "Tab", "c", "Enter")
	s.waitFor(`opened lead main:4`)
	s.waitFor(`main:4 +lead +idle +reported .*formed`)
	if text := s.capture(false); strings.Contains(text, "nobody") {
		t.Errorf("the refused form opened a lead:\n%s", text)
	}

	// Its hooks tell the person it needs them.
	if out, err := s.appTmux("send-keys", "-t", "main:4", "ask", "Enter").CombinedOutput(); err != nil {
		t.Fatalf("send-keys: %v: %s", err, out)
	}
	text, _ := s.waitFor(`main:4 +lead +needs_input! +reported .*formed · Claude needs your permission`)
	if !strings.Contains(text, "main:4 needs you: Claude needs your permission to use Bash") {
		t.Errorf("the status line does not say it:\n%s", text)
	}

	if now, err := os.ReadFile(settings); err != nil || !bytes.Equal(now, persons) {
		t.Errorf("%s changed: %q, %v", settings, now, err)
	}
	waitFileHolds(t, marker, "started")
}

// TestLeadAgentNoProfile: krad-ade --lead-agent naming no [[agent]] of config.toml is refused
// before anything starts, with the profiles there are and how to add one.
func TestLeadAgentNoProfile(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "krad-ade"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ config, want string }{
		{"", `krad-ade: error: --lead-agent claude: no [[agent]] of config.toml has that name: config.toml names no agents; add an [[agent]] table with its name, command and kind`},
		{"[[agent]]\nname = \"codex\"\ncommand = \"codex\"\nkind = \"codex\"\n", `krad-ade: error: --lead-agent claude: no [[agent]] of config.toml has that name: the only agent is codex`},
	} {
		if err := os.WriteFile(filepath.Join(home, "krad-ade", "config.toml"), []byte(tt.config), 0o600); err != nil {
			t.Fatal(err)
		}
		bin := testbin.Dir(t)
		cmd := exec.Command(filepath.Join(bin, "krad-ade"), "--headless", "--lead-agent", "claude")
		cmd.Env = baseEnv(bin, home)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 5 {
			t.Errorf("krad-ade --lead-agent claude: %v, want exit 5; stderr:\n%s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), tt.want+"\n") || !strings.Contains(stderr.String(), `krad-ade: hint: name an [[agent]] of config.toml, or add one there`) {
			t.Errorf("stderr:\n%s\nwant %q and the hint", stderr.String(), tt.want)
		}
		if exists(filepath.Join(home, "krad-ade", "api.json")) {
			t.Error("api.json written")
		}
	}
	killTmux(home)
}
