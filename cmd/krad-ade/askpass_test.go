package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// askpassVarsConfig is [git] ssh_askpass, and a terminal that writes its askpass variables down.
const askpassVarsConfig = `[git]
ssh_askpass = true

[[terminal]]
title = "vars"
command = """echo "G=[${GIT_ASKPASS-unset}] S=[${SSH_ASKPASS-unset}] R=[${SSH_ASKPASS_REQUIRE-unset}]" > $HOME/vars.tmp; mv $HOME/vars.tmp $HOME/vars; sleep 600"""
`

// TestTerminalsKeepTheUsersAskpass: krad-ade gives its terminals GIT_ASKPASS and, with [git]
// ssh_askpass, SSH_ASKPASS (SSH_ASKPASS_REQUIRE=force), both its own krad-ade-askpass, unless the
// user has their own: GIT_ASKPASS, or core.askPass in the git config (GIT_CONFIG_GLOBAL naming
// one that has it), keeps the app's askpass out of the terminals, which get the user's own;
// SSH_ASKPASS keeps the app's SSH_ASKPASS out.
func TestTerminalsKeepTheUsersAskpass(t *testing.T) {
	bin := testbin.Dir(t)
	askConfig := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(askConfig, []byte("[core]\n\taskPass = /opt/mine/git-askpass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ours := filepath.Join(bin, "krad-ade-askpass")
	for _, c := range []struct {
		name string
		env  []string
		want string
	}{
		{"the app's", nil, fmt.Sprintf("G=[%s] S=[%s] R=[force]", ours, ours)},
		{"own GIT_ASKPASS", []string{"GIT_ASKPASS=/opt/mine/askpass"}, "G=[/opt/mine/askpass] S=[unset] R=[unset]"},
		{"own core.askPass", []string{"GIT_CONFIG_GLOBAL=" + askConfig}, "G=[unset] S=[unset] R=[unset]"},
		{"own SSH_ASKPASS", []string{"SSH_ASKPASS=/opt/mine/ssh-askpass"}, fmt.Sprintf("G=[%s] S=[/opt/mine/ssh-askpass] R=[unset]", ours)},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.MkdirAll(filepath.Join(home, "krad-ade"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(home, "krad-ade", "config.toml"), []byte(askpassVarsConfig), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { killTmux(home) })
			apptest.Start(t, apptest.Options{Program: filepath.Join(bin, "krad-ade"), Env: append(baseEnv(bin, home), c.env...)})
			vars := filepath.Join(home, "vars")
			waitFile(t, vars, true)
			b, _ := os.ReadFile(vars)
			if got := strings.TrimSpace(string(b)); got != c.want {
				t.Errorf("the terminal has %s, want %s", got, c.want)
			}
		})
	}
}

// promptFloodConfig is a terminal that runs $GIT_ASKPASS 100 times at once, as a runaway script
// would, and writes down what each printed and how it exited.
const promptFloodConfig = `[[terminal]]
title = "flood"
command = """i=0; while [ $i -lt 100 ]; do i=$((i+1)); ( "$GIT_ASKPASS" "Password $i: " > $HOME/answer$i 2>$HOME/err$i; echo $? > $HOME/rc$i ) & done; wait; echo done > $HOME/all; sleep 600"""
`

// TestUIPromptFlood: 100 prompts at once from one terminal put 2 modals to the person, one after
// the other, and refuse the other 98 at once (conflict); Esc twice refuses the two, and the UI is
// as usable as before: ? shows the help. No askpass printed anything for git to take.
func TestUIPromptFlood(t *testing.T) {
	s := startScreen(t, 120, 40, promptFloodConfig, nil)
	s.waitFor(`Git asks`)
	conflicts := 0
	for deadline := time.Now().Add(uiPatience); conflicts < 98 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		conflicts = 0
		for i := 1; i <= 100; i++ {
			if b, _ := os.ReadFile(filepath.Join(s.home, fmt.Sprintf("err%d", i))); strings.Contains(string(b), "conflict") && strings.Contains(string(b), "too many git prompts") {
				conflicts++
			}
		}
	}
	if conflicts != 98 {
		t.Errorf("%d of the 100 prompts were refused as too many, want 98", conflicts)
	}
	for range 2 {
		s.waitFor(`Git asks`)
		s.keys("Escape")
		s.waitFor(`refused git's prompt of main:1`)
	}
	waitFile(t, filepath.Join(s.home, "all"), true)
	s.waitGone("Git asks")
	for i := 1; i <= 100; i++ {
		rc := exitOf(t, filepath.Join(s.home, fmt.Sprintf("rc%d", i)))
		answer, _ := os.ReadFile(filepath.Join(s.home, fmt.Sprintf("answer%d", i)))
		if rc == "0" || len(answer) != 0 {
			t.Errorf("askpass %d exited %s and printed %q; want a failure and nothing", i, rc, answer)
		}
	}
	s.keys("?")
	s.waitFor(`\?        this help`)
	s.keys("Escape")
	s.waitFor(`main:1 +shell .* flood`)
}

// phishingConfig is a worker that sends the phishing lines a hostile worker would, with the
// token every terminal has: a prompt in the name of the app's own gits (terminal 0), and one in
// its own name without its askpass key; then it raises a prompt through its askpass, as git
// would.
const phishingConfig = `[[terminal]]
title = "worker"
command = """tok="$(cat "$KRAD_ADE_TOKEN_FILE" 2>/dev/null || printf %s "$KRAD_ADE_TOKEN")"; for n in 0 1; do printf '{"api_version":1,"token":"%s","from":{"Git":"main"},"request":{"Askpass":{"prompt":"Password for github: ","kind":"password","terminal":%s}}}\n' "$tok" $n | nc -q 5 "${KRAD_ADE_ENDPOINT%:*}" "${KRAD_ADE_ENDPOINT##*:}" > $HOME/raw$n; done; "$GIT_ASKPASS" "Password for 'https://me@example.com': " > $HOME/real 2>$HOME/realerr; echo $? > $HOME/realrc; sleep 600"""
`

// TestUIPhishingPrompt: a worker's prompts in the name of the app's own gits, or in its own
// without its key, never reach the modal (the bus answers forbidden); its prompt through its
// askpass shows as its terminal's, with what the app proved, and the answer reaches it.
func TestUIPhishingPrompt(t *testing.T) {
	if _, err := exec.LookPath("nc"); err != nil {
		t.Skip("nc is missing (scripts/test installs netcat-openbsd)")
	}
	s := startScreen(t, 120, 40, phishingConfig, nil)
	screen, _ := s.waitFor(`sh in terminal main:1, on this computer, asks:`)
	for n, want := range []string{"only the gits the app runs itself may ask as the app", "came without that terminal's askpass key"} {
		if b, _ := os.ReadFile(filepath.Join(s.home, fmt.Sprintf("raw%d", n))); !strings.Contains(string(b), `"forbidden"`) || !strings.Contains(string(b), want) {
			t.Errorf("the phishing line naming terminal %d was answered %q, want forbidden: %s", n, b, want)
		}
	}
	if strings.Contains(screen, "app's own") || strings.Contains(screen, "github") {
		t.Errorf("a forged prompt reached the modal:\n%s", screen)
	}
	s.waitFor(`Proven: the askpass holds the key the app gave that terminal alone`)
	s.keys("pw", "Enter")
	waitFile(t, filepath.Join(s.home, "realrc"), true)
	if b, _ := os.ReadFile(filepath.Join(s.home, "real")); string(b) != "pw\n" {
		t.Errorf("the worker's own prompt got %q, want the answer typed", b)
	}
}
