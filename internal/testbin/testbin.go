// Package testbin builds the project's programs for tests that run them as a user would: krad-ade,
// krad, and krad-ade-agents (the krad executable under the companion's name), in one folder, as
// scripts/start builds them.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once sync.Once
	dir  string
	err  error
)

// Dir builds the programs once per test process and returns their folder. The folder is removed
// when the process exits only through Cleanup, which TestMain should call.
func Dir(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		dir, err = os.MkdirTemp("", "krad-bin-")
		if err != nil {
			return
		}
		err = build(dir)
	})
	if err != nil {
		t.Fatalf("build the programs: %v", err)
	}
	return dir
}

// Cleanup removes the folder Dir made, if any.
func Cleanup() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}

func build(dir string) error {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command("go", "build", "-trimpath", "-o", dir+"/", "./cmd/krad-ade", "./cmd/krad")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as scripts/lib.sh builds them
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return os.Link(filepath.Join(dir, "krad"), filepath.Join(dir, "krad-ade-agents"))
}
