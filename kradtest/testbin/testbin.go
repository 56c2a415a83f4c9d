// Package testbin builds the project's programs for tests that run them as a user would: krad-ade,
// krad, and krad-ade-agents (the krad executable under the companion's name), and the static krad
// for this machine's architecture (krad-linux-amd64, say), in one folder, as scripts/start builds
// them; [Static] adds the static krad of another (krad-linux-arm64).
package testbin

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// builtOnce is a folder of programs built once per test process, which Cleanup removes.
type builtOnce struct {
	once sync.Once
	dir  string
	err  error
}

// What the tests build: the programs (Dir), the SDK's everything server (Everything), the fake
// agents (FakeAgents).
var programs, everything, fakeAgents builtOnce

// get builds, the first time, into a new temporary folder named after pattern, and returns the
// folder; a build that failed, then or the first time, fails t, which says what was built.
func (b *builtOnce) get(t testing.TB, what, pattern string, build func(dir string) error) string {
	t.Helper()
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", pattern); b.err == nil {
			b.err = build(b.dir)
		}
	})
	if b.err != nil {
		t.Fatalf("build %s: %v", what, b.err)
	}
	return b.dir
}

// remove removes the folder, if it was made.
func (b *builtOnce) remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// Dir builds the programs once per test process and returns their folder. The folder is removed
// when the process exits only through Cleanup, which TestMain should call (Main does).
func Dir(t testing.TB) string {
	t.Helper()
	return programs.get(t, "the programs", "krad-bin-", build)
}

// Main runs the tests of a package that calls Dir, removes what Dir built, and exits with the
// tests' code: a package's TestMain calls it.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// Cleanup removes the folders Dir, Everything and FakeAgents made, if any.
func Cleanup() {
	programs.remove()
	everything.remove()
	fakeAgents.remove()
}

// goBuild runs go build -trimpath with args in the module's root, without cgo, as
// scripts/lib.sh builds the programs; env is added to this process's environment.
func goBuild(env []string, args ...string) error {
	cmd := exec.Command("go", append([]string{"build", "-trimpath"}, args...)...)
	cmd.Dir = root()
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func build(dir string) error {
	if err := goBuild(nil, "-o", dir+"/", "./cmd/krad-ade", "./cmd/krad"); err != nil {
		return err
	}
	// The static krad the app installs on SSH hosts, for this machine's architecture (the
	// tests' hosts are this machine or containers on it; Static adds another's).
	if err := buildStatic(dir, runtime.GOARCH); err != nil {
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

// buildStatic builds the static krad for linux/arch as dir/krad-linux-ARCH, and its gzipped form
// beside it, as build/linux-static/build makes them (stripped, gzip -9), so that what the tests
// and benchmarks send to hosts is what a release sends.
func buildStatic(dir, arch string) error {
	path := filepath.Join(dir, "krad-linux-"+arch)
	if err := goBuild([]string{"GOOS=linux", "GOARCH=" + arch}, "-ldflags=-s -w", "-o", path, "./cmd/krad-static"); err != nil {
		return fmt.Errorf("for linux/%s: %w", arch, err)
	}
	gz, err := os.Create(path + ".gz")
	if err != nil {
		return err
	}
	defer gz.Close()
	var stderr bytes.Buffer
	pack := exec.Command("gzip", "-9", "-n", "-c", path)
	pack.Stdout, pack.Stderr = gz, &stderr
	if err := pack.Run(); err != nil {
		return fmt.Errorf("gzip the static krad for linux/%s: %w\n%s", arch, err, stderr.Bytes())
	}
	return gz.Close()
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
			err = buildStatic(d, arch)
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
