// Package scripts_test runs the shell functions of scripts/lib.sh that decide what the README's
// test command reports, as bash runs them.
package scripts_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
