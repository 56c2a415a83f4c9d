package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// TestVariantsOfAgentProfiles is the variants issue's walk-through, typed in a lead's terminal
// of the real krad-ade, with two [[agent]] profiles in config.toml: scripted agents, "claude"
// taking the task as its argument, "codex" reading it once it shows it is ready, each editing
// files in its own group. krad variants run --agents claude:3,codex:2, krad wait --all (one codex
// fails), krad variants show (state, exit code, files, lines added and deleted), krad changes
// --stat, krad variants pick --how squash: the main repository's new commit is the winner's
// work. An agent config.toml does not name is bad_request naming those it does.
func TestVariantsOfAgentProfiles(t *testing.T) {
	testbin.Need(t, "git", "git")
	home := t.TempDir()
	repo := filepath.Join(home, "app")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	git("config", "user.name", "Pat")
	git("config", "user.email", "pat@example.com")
	writeFile(t, filepath.Join(repo, "retry.go"), "package retry\n\nfunc Retry() {}\n", 0o644)
	git("add", ".")
	git("commit", "-q", "-m", "first")
	base := git("rev-parse", "HEAD")

	agents := filepath.Join(home, "agents")
	// Variant N of "claude": backoff.go of 4+N lines, and one line of retry.go changed.
	writeFile(t, filepath.Join(agents, "claude.sh"), `n=${KRAD_ADE_GROUP##*-}
printf 'package retry\n\n// %s, way %s\nfunc Backoff(try int) int { return try * %s }\n' "$1" "$n" "$n" > backoff.go
i=0; while [ $i -lt $n ]; do echo "// line $i" >> backoff.go; i=$((i+1)); done
sed -i 's/^func Retry() {}$/func Retry() { Backoff(1) }/' retry.go
echo "claude did $KRAD_ADE_GROUP"
`, 0o644)
	// "codex" shows it is ready, reads the task, writes it down; its variant 5 fails.
	writeFile(t, filepath.Join(agents, "codex.sh"), `printf 'codex ready> '
read -r task
echo "$task" > notes.md
[ "$KRAD_ADE_GROUP" != retry-backoff-5 ] || exit 3
`, 0o644)
	writeFile(t, filepath.Join(home, "krad-ade", "config.toml"), `worktrees = "`+filepath.Join(home, "worktrees")+`"

[[agent]]
name = "claude"
command = "sh `+filepath.Join(agents, "claude.sh")+`"
prompt = "argument"

[[agent]]
name = "codex"
command = "sh `+filepath.Join(agents, "codex.sh")+`"
`, 0o600)

	out := filepath.Join(home, "out")
	lead := filepath.Join(home, "lead.sh")
	writeFile(t, lead, `exec >`+out+` 2>&1
krad variants run --title 'retry backoff' --agents claude:3,codex:2 --prompt 'make TestRetry pass without sleeping in tests'; echo "run=$?"
krad wait 2 3 4 5 6 --all; echo "wait=$?"
krad variants show retry-backoff; echo "show=$?"
krad changes 4 --stat; echo "changes=$?"
krad variants pick retry-backoff-3 --how squash --message 'retry: exponential backoff'; echo "pick=$?"
krad variants show retry-backoff; echo "after=$?"
krad variants run --title again --agents claude:1,nope:1 --prompt x; echo "unknown=$?"
echo END; sleep 60
`, 0o644)
	startAppIn(t, home, repo, "--lead", "sh "+lead)

	var text string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && !strings.Contains(text, "END"); time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(out)
		text = string(b)
	}
	for _, want := range []string{
		"set retry-backoff: 5 workers from " + base[:7] + " (main:2..main:6)\nrun=0",
		"main:2 worker 'retry backoff · claude' done (0)",
		"main:5 worker 'retry backoff · codex' done (0)",
		"main:6 worker 'retry backoff · codex' failed (3)",
		"wait=1",
		"show=0",
		" backoff.go | 7 +++++++\n retry.go   | 2 +-\n 2 files changed, 8 insertions(+), 1 deletion(-)\nchanges=0",
		"picked retry-backoff-3 (squash → ",
		"closed 4 other terminals",
		"pick=0",
		"after=0",
		"krad: error: RunVariants: the app answered bad_request: no agent nope: the agents are claude, codex ([[agent]] in config.toml)\n" +
			"krad: hint: an [[agent]] table in config.toml, on the computer that runs krad-ade, adds an agent; the app reads them when it starts\nunknown=1",
		"END",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the lead's output lacks %q", want)
		}
	}
	// krad variants show: per variant its terminal, state and exit code, files, + and -.
	for _, row := range []string{
		`retry-backoff-1\s+main:2\s+done \(0\)\s+2\s+6\s+1\s+-`,
		`retry-backoff-2\s+main:3\s+done \(0\)\s+2\s+7\s+1\s+-`,
		`retry-backoff-3\s+main:4\s+done \(0\)\s+2\s+8\s+1\s+-`,
		`retry-backoff-4\s+main:5\s+done \(0\)\s+1\s+1\s+0\s+-`,
		`retry-backoff-5\s+main:6\s+failed \(3\)\s+1\s+1\s+0\s+-\nshow=0`,
		// After the pick: the winner alone is left, picked.
		`VARIANT\s+TERMINAL\s+STATE\s+FILES\s+\+\s+-\s+PICKED\nretry-backoff-3\s+main:4\s+done \(0\)\s+2\s+8\s+1\s+squash [0-9a-f]{40}\nafter=0`,
	} {
		if !regexp.MustCompile(row).MatchString(text) {
			t.Errorf("krad variants show lacks a row like %s", row)
		}
	}

	// The main repository: one commit on main, the winner's work, by the repository's identity.
	if got := git("log", "-1", "--format=%s|%an|%P"); got != "retry: exponential backoff|Pat|"+base {
		t.Errorf("main's last commit is %q, want the pick's on %s", got, base)
	}
	if got := git("show", "HEAD:backoff.go"); !strings.HasPrefix(got, "package retry\n\n// make TestRetry pass without sleeping in tests, way 3\n") {
		t.Errorf("the picked backoff.go is %q: the prompt did not reach claude as one argument", got)
	}
	if got := git("diff", "--name-only", base, "HEAD"); got != "backoff.go\nretry.go" {
		t.Errorf("the pick changed %q", got)
	}
	if st := git("status", "--porcelain"); st != "" {
		t.Errorf("the main checkout after the squash: %q", st)
	}
	// The typed prompt reached codex; the losers' work is kept; no set "again" was made.
	if got := git("show", "refs/krad/snapshots/retry-backoff-4:notes.md"); got != "make TestRetry pass without sleeping in tests" {
		t.Errorf("codex's kept notes.md: %q", got)
	}
	if got := git("for-each-ref", "--format=%(refname)", "refs/heads/krad/"); got != "refs/heads/krad/retry-backoff-1\nrefs/heads/krad/retry-backoff-2\nrefs/heads/krad/retry-backoff-3\nrefs/heads/krad/retry-backoff-4\nrefs/heads/krad/retry-backoff-5" {
		t.Errorf("the branches after the pick and the refused run: %q", got)
	}
	if t.Failed() {
		t.Logf("the lead's output:\n%s", text)
	}
}

// writeFile writes a file, making its folders (owner-only, as the app wants its config folder).
func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
