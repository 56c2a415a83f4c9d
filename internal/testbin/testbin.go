// Package testbin builds the project's programs for tests that run them as a user would: krad-ade,
// krad, and krad-ade-agents (the krad executable under the companion's name), and the static krad
// for this machine's architecture (krad-linux-amd64, say), in one folder, as scripts/start builds
// them; [Static] adds the static krad of another (krad-linux-arm64).
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
	root := root()
	cmd := exec.Command("go", "build", "-trimpath", "-o", dir+"/", "./cmd/krad-ade", "./cmd/krad")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as scripts/lib.sh builds them
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	// The static krad the app installs on SSH hosts, for this machine's architecture (the
	// tests' hosts are this machine or containers on it; Static adds another's).
	if err := buildStatic(root, dir, runtime.GOARCH); err != nil {
		return err
	}
	for _, name := range []string{"krad-ade-agents", "krad-ade-askpass"} {
		if err := os.Link(filepath.Join(dir, "krad"), filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// buildStatic builds the static krad for linux/arch as dir/krad-linux-ARCH, as
// build/linux-static/build names it.
func buildStatic(root, dir, arch string) error {
	static := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "krad-linux-"+arch), "./cmd/krad-static")
	static.Dir = root
	static.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if out, err := static.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/krad-static for linux/%s: %w\n%s", arch, err, out)
	}
	return nil
}

var statics struct {
	mu    sync.Mutex
	built map[string]error
}

// Static builds the static krad for linux/arch (arm64, say) into Dir's folder beside the
// others, once per test process, and returns its path: the app installs krad-linux-ARCH on an
// ARCH host.
func Static(t testing.TB, arch string) string {
	t.Helper()
	d := Dir(t)
	statics.mu.Lock()
	defer statics.mu.Unlock()
	err, done := statics.built[arch]
	if !done {
		if arch != runtime.GOARCH {
			err = buildStatic(root(), d, arch)
		}
		if statics.built == nil {
			statics.built = map[string]error{}
		}
		statics.built[arch] = err
	}
	if err != nil {
		t.Fatalf("build the static krad: %v", err)
	}
	return filepath.Join(d, "krad-linux-"+arch)
}
