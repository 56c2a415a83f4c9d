package remote_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/krad-ade/krad/internal/version"
	"github.com/krad-ade/krad/remote"
	"github.com/krad-ade/krad/remote/sshdtest"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// thisPlatform is the platform of this machine, which is the host in these tests.
var thisPlatform = remote.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}

// staticKrad builds cmd/krad-static, as build/linux-static does, for this machine, with its
// gzipped form beside it, once per test process, and returns the file.
func staticKrad(t testing.TB) string {
	t.Helper()
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skipf("the static krad is for linux/amd64 and linux/arm64 hosts, and this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if testing.Short() {
		t.Skip("builds the static krad")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "krad-static-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(buildDir, thisPlatform.StaticName()), "./cmd/krad-static")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = err
			t.Logf("go build ./cmd/krad-static:\n%s", out)
			return
		}
		// Its gzipped form beside it, as build/linux-static/build makes it, so that the tests
		// and benchmarks send what a release sends.
		path := filepath.Join(buildDir, thisPlatform.StaticName())
		var packed, stderr bytes.Buffer
		gz := exec.Command("gzip", "-9", "-n", "-c", path)
		gz.Stdout, gz.Stderr = &packed, &stderr
		if err := gz.Run(); err != nil {
			buildErr = fmt.Errorf("gzip the static krad: %w: %s", err, stderr.Bytes())
			return
		}
		buildErr = os.WriteFile(remote.PackedName(path), packed.Bytes(), 0o644)
	})
	if buildErr != nil {
		t.Fatalf("build the static krad: %v", buildErr)
	}
	return filepath.Join(buildDir, thisPlatform.StaticName())
}

// binary reads the static krad at this build's version.
func binary(t testing.TB) remote.Binary {
	t.Helper()
	b, err := remote.ReadBinary(staticKrad(t), thisPlatform, version.Build)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// start starts an sshd whose sessions' HOME has a .bashrc with the given content, and connects.
func start(t testing.TB, bashrc string, opts sshdtest.Options) (*sshdtest.Server, remote.Host) {
	t.Helper()
	srv := sshdtest.Start(t, opts)
	if bashrc != "" {
		if err := os.WriteFile(filepath.Join(srv.Home, ".bashrc"), []byte(bashrc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return srv, remote.SSH(srv.Dial(t))
}

// noisyBashrc prints on both outputs, without a final newline on stdout, as some start-up files do.
const noisyBashrc = `echo "Welcome to the build box"
echo "conda: base activated" >&2
printf '\033[1mlast login: yesterday'
`

func TestProbe(t *testing.T) {
	for _, tt := range []struct{ name, bashrc string }{{"quiet", ""}, {"noisy .bashrc", noisyBashrc}} {
		t.Run(tt.name, func(t *testing.T) {
			_, h := start(t, tt.bashrc, sshdtest.Options{})
			got, err := remote.Probe(context.Background(), h)
			if err != nil || got != thisPlatform {
				t.Errorf("got %v, %v; want %v", got, err, thisPlatform)
			}
		})
	}
}

func TestProbeShellThatExits(t *testing.T) {
	_, h := start(t, "echo 'Welcome\033[31m'; exit 0\n", sshdtest.Options{})
	_, err := remote.Probe(context.Background(), h)
	if err == nil {
		t.Fatal("got no error, want one that quotes what the shell printed")
	}
	msg := err.Error()
	if !strings.Contains(msg, `printed "Welcome\x1b[31m\n"`) || !strings.Contains(msg, "~/.bashrc") || strings.Contains(msg, "\x1b") {
		t.Errorf("got %q, want the shell's output quoted and escaped, and ~/.bashrc named", msg)
	}
}
