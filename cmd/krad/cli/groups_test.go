package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/krad-ade/krad/worktree"
)

// TestWriteGroupsHeld: a held group's line names the folders that hold it.
func TestWriteGroupsHeld(t *testing.T) {
	var b bytes.Buffer
	l := worktree.List{Top: "/r", Groups: []worktree.Group{
		{Name: "nest", Branch: "krad/nest", Dir: "/w/nest", Held: []string{"vendor/inner", "x\x1b[2J"}},
		{Name: "plain", Branch: "krad/plain", Dir: "/w/plain"},
	}}
	if err := writeGroups(&b, l, ""); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[1], "nest") || !strings.Contains(lines[1], "(held: vendor/inner, ") || strings.Contains(lines[1], "\x1b") {
		t.Errorf("the held group's line is %q", lines[1])
	}
	if strings.Contains(lines[2], "held") {
		t.Errorf("the plain group's line is %q", lines[2])
	}
}

// TestRetiredLine: what krad retire prints, held or retired.
func TestRetiredLine(t *testing.T) {
	held := retiredLine(worktree.Retired{Group: "nest", Dir: "/w/nest", Branch: "krad/nest", Held: []string{"vendor/inner"}})
	if !strings.Contains(held, "group nest is held, nothing removed") || !strings.Contains(held, "vendor/inner") || !strings.Contains(held, "krad retire --force nest") {
		t.Errorf("held: %q", held)
	}
	gone := retiredLine(worktree.Retired{Group: "idle", Dir: "/w/idle", Removed: true, Branch: "krad/idle", BranchDeleted: true})
	if gone != "group idle retired: its checkout was removed; branch krad/idle, which held nothing, was deleted" {
		t.Errorf("retired: %q", gone)
	}
}

// TestRetireUsage: krad retire takes one valid group name, checked before the bus is sought.
func TestRetireUsage(t *testing.T) {
	for _, args := range [][]string{{"retire"}, {"retire", "a", "b"}, {"retire", "Bad/Name"}} {
		var out, errOut bytes.Buffer
		code := Run(t.Context(), append([]string{"krad"}, args...), MapEnv(nil), strings.NewReader(""), &out, &errOut, Options{})
		if code != ExitUsage || out.Len() != 0 {
			t.Errorf("krad %v: exit %d, stdout %q, stderr %q; want a usage error", args, code, out.String(), errOut.String())
		}
	}
}

// TestWriteGroupsSetup: krad groups says which group sets up and in which terminal, and which
// failed, with how and the end of its output, escaped.
func TestWriteGroupsSetup(t *testing.T) {
	var b bytes.Buffer
	code := 3
	l := worktree.List{Top: "/r", Groups: []worktree.Group{
		{Name: "up", Branch: "krad/up", Dir: "/w/up", Setup: &worktree.Setup{State: worktree.SetupRunning, Terminal: "main:2"}},
		{Name: "bad", Branch: "krad/bad", Dir: "/w/bad", Setup: &worktree.Setup{State: worktree.SetupFailed, Terminal: "main:3", Why: "exited with 3", ExitCode: &code,
			Output: "fetching\nnpm ERR! missing: left-pad \x1b[31m\n"}},
		{Name: "done", Branch: "krad/done", Dir: "/w/done", Setup: &worktree.Setup{State: worktree.SetupDone}},
	}}
	if err := writeGroups(&b, l, ""); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	if !strings.Contains(lines[1], "(setting up, in main:2)") || !strings.Contains(lines[2], "(setup failed: exited with 3)") || strings.Contains(lines[3], "setup") {
		t.Errorf("krad groups printed:\n%s", out)
	}
	if !strings.Contains(out, "group bad's setup failed (exited with 3, in main:3)") || !strings.Contains(out, "  | npm ERR! missing: left-pad") ||
		!strings.Contains(out, "krad retire bad") || strings.Contains(out, "\x1b") {
		t.Errorf("krad groups printed:\n%s", out)
	}
}
