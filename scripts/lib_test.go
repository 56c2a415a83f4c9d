// Package scripts_test runs the shell functions of scripts/lib.sh that decide what the README's
// test command reports, as bash runs them.
package scripts_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEndOnExit: scripts/test's exit status is what CI judges. After its last line it must exit 0,
// with its background fuzzing already waited for; when a stage fails it must exit with that
// stage's status at once, ending the fuzzing; both ways the temporary folder goes. The inline trap
// it replaced exited 1 after "all tests passed" (its kill of the ended job failed under set -e).
func TestEndOnExit(t *testing.T) {
	lib, err := filepath.Abs("lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := `set -euo pipefail
. "$1"
dir=$(mktemp -d -p "$2")
sleep "$3" &
job=$!
end_on_exit "$job" "$dir"
if [ "$4" = fail ]; then exit 3; fi
wait "$job"
echo "all tests passed"
`
	for _, c := range []struct {
		name, sleep, how string
		want             int
	}{
		{"passed", "0.1", "pass", 0},
		{"a stage failed", "60", "fail", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command("bash", "-c", script, "bash", lib, tmp, c.sleep, c.how)
			began := time.Now()
			out, err := cmd.CombinedOutput()
			rc := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				rc = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if rc != c.want {
				t.Errorf("exit status %d, want %d; output: %q", rc, c.want, out)
			}
			if c.how == "pass" && !strings.Contains(string(out), "all tests passed") {
				t.Errorf("output %q", out)
			}
			// The failed run did not wait out its background job: it was ended.
			if took := time.Since(began); took > 30*time.Second {
				t.Errorf("the script took %v: its background job was not ended", took)
			}
			left, err := os.ReadDir(tmp)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 0 {
				t.Errorf("the temporary folder is still there: %v", left)
			}
		})
	}
}

// TestFuzzRuns: when Go's fuzzer fails its own -fuzztime deadline with no failing input,
// scripts/test runs the target again for as many runs as it had made, as a count. fuzz_runs reads
// that count from the log of a real fuzzer, run here on a target of its own for a second, and the
// count it gives is one the fuzzer takes and finishes: the run that sets no deadline passes.
func TestFuzzRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a fuzzer")
	}
	lib, err := filepath.Abs("lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	for name, text := range map[string]string{
		"go.mod": "module fuzzruns\n\ngo 1.24\n",
		"reverse_test.go": `package fuzzruns

import "testing"

func FuzzReverse(f *testing.F) {
	f.Add("krad")
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
			b[i], b[j] = b[j], b[i]
		}
		if len(b) != len(s) {
			t.Fatal("length changed")
		}
	})
}
`,
	} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(mod, "fuzz.test")
	build := exec.Command("go", "test", "-c", "-fuzz=.", "-o", bin, ".")
	build.Dir = mod
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	fuzz := func(budget string) []byte {
		t.Helper()
		cmd := exec.Command(bin, "-test.run=^$", "-test.fuzz=^FuzzReverse$", "-test.fuzztime="+budget,
			"-test.fuzzcachedir="+filepath.Join(mod, "cache"), "-test.parallel=1")
		cmd.Dir = mod
		out, err := cmd.CombinedOutput()
		if err != nil && !strings.Contains(string(out), "context deadline exceeded") {
			t.Fatalf("fuzzing for %s: %v\n%s", budget, err, out)
		}
		return out
	}
	log := filepath.Join(mod, "log")
	if err := os.WriteFile(log, fuzz("1s"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "-c", `set -euo pipefail; . "$1"; fuzz_runs "$2"`, "bash", lib, log).CombinedOutput()
	if err != nil {
		t.Fatalf("fuzz_runs: %v\n%s", err, out)
	}
	runs := strings.TrimSpace(string(out))
	// What the fuzzer reported last, read here on its own: "execs: N".
	want := 1000
	if m := regexp.MustCompile(`execs: (\d+)`).FindAllStringSubmatch(readFile(t, log), -1); len(m) > 0 {
		if n, _ := strconv.Atoi(m[len(m)-1][1]); n > want {
			want = n
		}
	}
	if runs != strconv.Itoa(want) {
		t.Fatalf("fuzz_runs said %q, want %d; the log:\n%s", runs, want, readFile(t, log))
	}
	if again := fuzz(runs + "x"); strings.Contains(string(again), "deadline") || !strings.Contains(string(again), "PASS") {
		t.Errorf("the run of %s runs did not pass:\n%s", runs, again)
	}

	// A log with no report, as when the fuzzer failed before its first: the least count.
	empty := filepath.Join(mod, "empty")
	if err := os.WriteFile(empty, []byte("FAIL\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command("bash", "-c", `set -euo pipefail; . "$1"; fuzz_runs "$2"`, "bash", lib, empty).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1000" {
		t.Errorf("fuzz_runs on a log with no report: %q, %v; want 1000", out, err)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
