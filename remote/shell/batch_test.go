package shell

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestBatch: the steps of a batch run in order under one sh, each with its own arguments (any
// bytes, as data), in a subshell of its own: a step that fails or exits ends only itself, and
// what it changed (its folder, its variables) does not reach the next. Only the step given stdin
// reads it. Each step's report is read from the one stdout, and the batch exits with its first
// failure's status. So it is for the batch as a command (sh -c) and as a subshell of a running
// sh, which goes on after it, with the batch's status in $?.
func TestBatch(t *testing.T) {
	for _, form := range []string{"command", "subshell"} {
		t.Run(form, func(t *testing.T) { testBatch(t, form) })
	}
}

func testBatch(t *testing.T, form string) {
	first := Script{Name: "ONE", Body: `cd /; x=set; krad_say ok "$1" "$2" "$#";`}
	failing := Script{Name: "TWO", Body: `krad_fail "no $1";`}
	reader := Script{Name: "THREE", Body: `l=$(cat); krad_say ok "$l" "${x:-unset}" "$(pwd)";`}
	refusing := Script{Name: "FOUR", Body: `krad_refuse owner "$1";`}
	last := Script{Name: "FIVE", Body: `n=$(cat | wc -c); krad_say ok "$n";`}
	b := Batch{
		{Script: first, Args: []string{"it's $(id)", "`x` ;"}},
		{Script: failing, Args: []string{"luck"}},
		{Script: reader, Stdin: strings.NewReader("from stdin\n")},
		{Script: refusing, Args: []string{"~/.krad-ade"}},
		{Script: last},
	}
	line := b.Command()
	if form == "subshell" {
		line = "o=outer; " + b.Subshell() + "; s=$?; echo after $o ${x:-unset} $s; exit $s"
	}
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = t.TempDir()
	cmd.Stdin = b.Stdin()
	out, err := cmd.Output()
	if form == "subshell" && !strings.HasSuffix(string(out), "after outer unset 1\n") {
		t.Errorf("the sh did not go on after the batch, with its status and its own variables: %q", out)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("the batch exited with %v, want 1 (its first failure's)\n%s", err, out)
	}
	check := func(i int, want ...string) {
		t.Helper()
		got, err := b.Result(i, out, err)
		if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("step %d: got %q, %v; want %q", i, got, err, want)
		}
	}
	check(0, "it's $(id)", "`x` ;", "2")
	check(2, "from stdin", "unset", cmd.Dir)
	check(4, "0")
	if _, err := b.Result(1, out, err); err == nil || !strings.HasPrefix(err.Error(), "no luck: ") || !errors.As(err, &exit) {
		t.Errorf("the failed step gives %v, want \"no luck: \" and the batch's exit error", err)
	}
	var re *RefusedError
	if _, err := b.Result(3, out, err); !errors.As(err, &re) || re.Path != "~/.krad-ade" {
		t.Errorf("the refusing step gives %v, want a *RefusedError for ~/.krad-ade", err)
	}
	if strings.ContainsAny(line, "\n\r") {
		t.Errorf("the batch has a line break: %q", line)
	}
}

// TestBatchTenArguments: arguments past the ninth reach their step (${10}, not $1 and 0).
func TestBatchTenArguments(t *testing.T) {
	s := Script{Name: "A", Body: `krad_say ok "$1";`}
	var b Batch
	for i := range 11 {
		b = append(b, Step{Script: Script{Name: "S" + string(rune('A'+i)), Body: s.Body}, Args: []string{strings.Repeat("x", i+1)}})
	}
	out, err := exec.Command("sh", "-c", b.Command()).Output()
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		if got, err := b.Result(i, out, nil); err != nil || len(got) != 1 || got[0] != strings.Repeat("x", i+1) {
			t.Errorf("step %d: got %q, %v", i, got, err)
		}
	}
}

func TestBatchPanics(t *testing.T) {
	s := Script{Name: "SAME", Body: "krad_say ok;"}
	for name, b := range map[string]Batch{
		"two of one name": {{Script: s}, {Script: s}},
		"two readers":     {{Script: s, Stdin: strings.NewReader("")}, {Script: Script{Name: "OTHER", Body: "krad_say ok;"}, Stdin: strings.NewReader("")}},
		"a bad name":      {{Script: Script{Name: "low", Body: "krad_say ok;"}}},
		"a backslash":     {{Script: Script{Name: "X", Body: `echo "a\\b";`}}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Command did not panic", name)
				}
			}()
			b.Command()
		}()
	}
}
