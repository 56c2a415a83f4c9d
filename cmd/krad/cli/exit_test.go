package cli

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestExitCodesDocumented: README.md's table of exit codes is ExitCodes, row for row, and krad
// --help's footer lists every code: the table is written once.
func TestExitCodesDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n### Exit codes of krad\n")
	if !ok {
		t.Fatal("README.md has no section \"### Exit codes of krad\"")
	}
	var rows []string
	for l := range strings.Lines(section) {
		l = strings.TrimSuffix(l, "\n")
		if strings.HasPrefix(l, "|") {
			rows = append(rows, l)
		} else if len(rows) > 0 {
			break
		}
	}
	want := []string{"| code | meaning |", "|---|---|"}
	for _, e := range ExitCodes {
		want = append(want, fmt.Sprintf("| %d | %s |", e.Code, e.Long))
	}
	if got := strings.Join(rows, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("README.md's table of exit codes is\n%s\nwant, from ExitCodes,\n%s", got, strings.Join(want, "\n"))
	}
	for i, e := range ExitCodes {
		if e.Code != i {
			t.Errorf("ExitCodes[%d] is code %d: the table is in order, one row a code", i, e.Code)
		}
	}

	out, _, code := runAs(t, "krad", nil, nil, "--help")
	if code != ExitOK {
		t.Fatalf("krad --help exited %d", code)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, e := range ExitCodes {
		if item := fmt.Sprintf("%d %s", e.Code, e.Short); !strings.Contains(flat, item) {
			t.Errorf("krad --help does not say %q:\n%s", item, out)
		}
	}
}
