package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The packages the static krad must not link: it finds the bus through the variables only, and
// it runs on SSH hosts without a C library.
var forbidden = []string{
	"github.com/krad-ade/krad/discovery",
	"github.com/krad-ade/krad/local",
	"runtime/cgo",
}

// deps is `go list -deps` of pkg for a platform, with cgo off as the static build has it.
func deps(t *testing.T, pkg, goos, goarch string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

func TestDeps(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		got := deps(t, ".", "linux", arch)
		if !slices.Contains(got, "github.com/krad-ade/krad/cmd/krad/cli") {
			t.Fatalf("linux/%s: go list -deps did not list the command tree; the check below means nothing", arch)
		}
		for _, pkg := range forbidden {
			if slices.Contains(got, pkg) {
				t.Errorf("linux/%s: the static krad links %s", arch, pkg)
			}
		}
	}
	// The same check on the ordinary krad finds discovery, so it is not looking in the wrong place.
	if got := deps(t, "../krad", "linux", "amd64"); !slices.Contains(got, "github.com/krad-ade/krad/discovery") {
		t.Error("cmd/krad does not link discovery: the dependency check cannot tell the two builds apart")
	}
}

func TestBuildsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the executable")
	}
	for _, arch := range []string{"amd64", "arm64"} {
		out := filepath.Join(t.TempDir(), "krad-linux-"+arch)
		cmd := exec.Command("go", "build", "-o", out, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("CGO_ENABLED=0 GOOS=linux GOARCH=%s go build: %v\n%s", arch, err, b)
		}
	}
}
