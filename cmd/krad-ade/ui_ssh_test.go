package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// uiSSHWorld is the sshd-based world of TestSSHEnvironmentsFollowConfigWhileTheAppRuns with the
// UI on a screen: the host's key trusted, and the person's own ssh (OpenSSH's, on PATH) reading
// the world's ~/.ssh/config. ssh finds its config through the user's home in the password
// database, not HOME, so a two-line ssh on PATH names the file as the person's own ssh would
// find it.
func uiSSHWorld(t *testing.T, w, h int) (*sshWorld, *screen) {
	t.Helper()
	world := newSSHWorld(t, "")
	ssh := filepath.Join(world.home, ".ssh")
	knownHosts := filepath.Join(ssh, "known_hosts")
	world.write(knownHosts, world.sshd.KnownHostsLine(0)+"\n")
	block, err := os.ReadFile(filepath.Join(ssh, "config"))
	if err != nil {
		t.Fatal(err)
	}
	world.write(filepath.Join(ssh, "config"), string(block)+"  UserKnownHostsFile "+knownHosts+"\n  BatchMode yes\n")
	wrapper := filepath.Join(world.home, "ssh-bin")
	if err := os.Mkdir(wrapper, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wrapper, "ssh"), []byte("#!/bin/sh\nexec /usr/bin/ssh -F \"$HOME/.ssh/config\" \"$@\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	world.write(filepath.Join(world.home, "krad-ade", "config.toml"), "")
	s := startScreenIn(t, world.home, "", w, h, []string{"PATH=" + wrapper + ":" + testbin.Dir(t) + ":/usr/local/bin:/usr/bin:/bin"})
	return world, s
}

// uiBuildConfig is the SSH environment build with one terminal that shows what it is typed,
// escapes included (cat -v prints ESC as ^[).
const uiBuildConfig = `[[environment]]
name = "build"
ssh = "buildbox"
dir = "~"

[[terminal]]
environment = "build"
title = "catv"
command = "cat -v"
`

// TestUISSHEnvironments: an SSH environment added to config.toml while the UI runs gets its row
// (its host, its connection's state) and its terminal; Enter on that terminal attaches through
// the person's own ssh -t to the host's tmux, a detach there comes back to the UI, twice, with
// the terminal's modes as the UI had them and no key reaching the worker; removed from
// config.toml, its row goes and n no longer takes its name.
func TestUISSHEnvironments(t *testing.T) {
	w, s := uiSSHWorld(t, 120, 40)
	s.waitFor(`main:1 +shell`)
	if text := s.capture(false); strings.Contains(text, "buildbox") {
		t.Fatalf("a row for build before config.toml names it:\n%s", text)
	}
	cfg := filepath.Join(w.home, "krad-ade", "config.toml")

	// Added: its row says where, then connected; its terminal comes.
	w.write(cfg, uiBuildConfig)
	s.waitFor(`build +ssh buildbox +connected: 127\.0\.0\.1:\d+ on the host · tmux up`)
	s.waitFor(`build:1 .* catv`)

	// Attached to build:1 on the host, through ssh -t; detached there, back.
	s.keys("/", "catv", "Enter")
	s.waitFor(`filter "catv": 1 shown`)
	for range 2 {
		s.attachAndBack(w.hostTmux, `\[build\] `, "build:1", "1")
	}
	out, err := w.hostTmux("capture-pane", "-p", "-t", "build:1").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(out)) != "" {
		t.Errorf("keys reached the worker in the handovers; its pane (cat -v):\n%s", out)
	}
	// (No key typed at once on the return here: an Esc typed within moments of coming back from
	// an SSH attach was seen lost, with the key after it, in a few runs out of twenty on a loaded
	// machine; the filter stays, which n does not mind.)

	// Removed: the row goes, and a lead can no longer be named there.
	w.write(cfg, "")
	s.waitGone("ssh buildbox")
	s.waitFor(`environment build removed`)
	s.keys("n")
	s.waitFor(`New lead`)
	s.keys("Tab", "Tab", "BSpace", "BSpace", "BSpace", "BSpace", "build", "Tab", "Tab", "Enter")
	s.waitFor(`error: no environment "build": the environments are main`)
	s.keys("Escape")
	s.waitFor(`Enter attach · x close`) // an Esc and a q that follow at once are Alt-q
	s.keys("q")
	s.waitFor(`krad-ade exited 0`)
	s.wantModesRestored()
}
