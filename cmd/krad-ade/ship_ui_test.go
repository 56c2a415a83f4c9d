package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/krad-ade/krad/kradtest/gittest"
	"github.com/krad-ade/krad/kradtest/testbin"
)

const shipPassword = "Ship-pa55word-typed-in-the-UI"

// git runs git in dir, as a person would, and returns what it printed.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// shipConfig is a lead that spawns a worker into group ship, which commits a file there.
const shipConfig = `[[terminal]]
title = "lead"
lead = true
command = "krad spawn --group ship --title shipper -- sh -c 'echo shipped > s.txt && git add s.txt && git -c user.name=w -c user.email=w@x commit -qm ship && sleep 600'; sleep 600"
`

// TestUIPushAndPullRequest: on a group's agent in krad-ade's UI, p pushes the group's branch to the
// repository's remote, a real git server with basic auth: git's password prompt comes as the
// modal, as the app's own git's; the password typed there pushes, and is shown nowhere. P then
// opens a pull request with gh (a stand-in that records its arguments: GitHub is the outside
// service), and the status line gives its address.
func TestUIPushAndPullRequest(t *testing.T) {
	url, bare := gittest.Server(t, "me", shipPassword)
	url = strings.Replace(url, "http://", "http://me@", 1) + "/r.git"
	home := t.TempDir()
	repo := filepath.Join(t.TempDir(), "app")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "first")
	git(t, repo, "remote", "add", "origin", url)
	if err := os.MkdirAll(filepath.Join(home, "krad-ade"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "krad-ade", "config.toml"), []byte(shipConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	gh := gittest.FakeGH(t, "https://github.com/me/app/pull/12", "")
	bin := testbin.Dir(t)
	s := startScreenIn(t, home, repo, 120, 40, []string{"PATH=" + bin + ":" + gh.Dir + ":/usr/local/bin:/usr/bin:/bin", "GIT_CONFIG_GLOBAL=/dev/null"})

	s.waitFor(`main:2 +worker .*shipper`)
	s.keys("/", "shipper", "Enter")
	s.waitFor(`filter "shipper": 1 shown`)
	var tip string
	for i := 0; i < 100 && tip == ""; i++ { // the worker commits as it starts
		if out, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%H|%s", "krad/ship").Output(); err == nil && strings.HasSuffix(strings.TrimSpace(string(out)), "|ship") {
			tip, _, _ = strings.Cut(string(out), "|")
		} else {
			s.WaitFor(`shipper`)
		}
	}
	if tip == "" {
		t.Fatal("the worker did not commit in its group")
	}

	s.keys("p")
	screen, _ := s.waitFor(`git in the app's own git, on this computer, asks:`)
	if !strings.Contains(screen, "Password for 'http://me@127.0.0.1") {
		t.Errorf("the modal:\n%s", screen)
	}
	s.keys(shipPassword, "Enter")
	s.waitFor(`pushed krad/ship \(` + tip[:10] + `\) to origin`)
	if got := git(t, bare, "rev-parse", "refs/heads/krad/ship"); got != tip {
		t.Errorf("the server's krad/ship is %s, want %s", got, tip)
	}

	s.keys("P") // the push before the pull request asks again: no credential helper keeps it
	s.waitFor(`git in the app's own git, on this computer, asks:`)
	s.keys(shipPassword, "Enter")
	s.waitFor(`pull request https://github.com/me/app/pull/12`)
	if got, want := gh.Ran(t), []string{"pr", "create", "--head=krad/ship", "--base=main", "--fill"}; !slices.Equal(got, want) {
		t.Errorf("gh ran with %q, want %q", got, want)
	}
	t.Cleanup(func() {
		if strings.Contains(s.Seen(), shipPassword) {
			t.Error("the password was shown")
		}
		if b, _ := os.ReadFile(filepath.Join(home, "state", "krad-ade", "krad-ade.log")); strings.Contains(string(b), shipPassword) {
			t.Error("the password was logged")
		}
	})
}
