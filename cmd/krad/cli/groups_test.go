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
