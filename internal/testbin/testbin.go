// Package testbin builds the project's programs for tests that run them as a user would: krad-ade,
// krad, and krad-ade-agents (the krad executable under the companion's name), and the static krad
// for this machine's architecture (krad-linux-amd64, say), in one folder, as scripts/start builds
// them.
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
// when the process exits only through Cleanup, which TestMain should call (Main does).
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

// Main runs the tests of a package that calls Dir, removes what Dir built, and exits with the
// tests' code: a package's TestMain calls it.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// Cleanup removes the folder Dir made, if any.
func Cleanup() {
	if dir != "" {
		os.RemoveAll(dir)
	}
	if mcpDir != "" {
		os.RemoveAll(mcpDir)
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
	// The static krad the app installs on SSH hosts, for this machine's architecture (the
	// tests' hosts are this machine or containers on it).
	static := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "krad-linux-"+runtime.GOARCH), "./cmd/krad-static")
	static.Dir = root
	static.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := static.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/krad-static: %w\n%s", err, out)
	}
	return os.Link(filepath.Join(dir, "krad"), filepath.Join(dir, "krad-ade-agents"))
}
