package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/krad-ade/krad/internal/version"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// qemuNames maps GOARCH to qemu's name for the processor.
var qemuNames = map[string]string{"arm64": "aarch64", "amd64": "x86_64"}

// The packages the static krad must not link: it finds the bus through the variables only; it
// runs on SSH hosts without a C library; and it is copied to every host, so the MCP SDK (and the
// net/http and crypto/tls it brings), which more than doubled it, stays out: its krad mcp relays
// to one the app runs (package mcprelay). A forbidden name ending in "/" forbids every package
// under it.
var forbidden = []string{
	"github.com/krad-ade/krad/discovery",
	"github.com/krad-ade/krad/local",
	"runtime/cgo",
	"github.com/modelcontextprotocol/go-sdk/",
	"github.com/krad-ade/krad/mcpserve",
	"github.com/krad-ade/krad/mcprelay",
	"net/http",
	"crypto/tls",
}

// links says whether the package list deps holds pkg, or a package under it when pkg ends in "/".
func links(deps []string, pkg string) bool {
	if strings.HasSuffix(pkg, "/") {
		return slices.ContainsFunc(deps, func(d string) bool { return strings.HasPrefix(d, pkg) })
	}
	return slices.Contains(deps, pkg)
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
			if links(got, pkg) {
				t.Errorf("linux/%s: the static krad links %s", arch, pkg)
			}
		}
	}
	// The same check on the ordinary krad finds discovery, and on krad-ade the MCP SDK, so it is
	// not looking in the wrong place.
	got := deps(t, "../krad", "linux", "amd64")
	if !links(got, "github.com/krad-ade/krad/discovery") {
		t.Error("cmd/krad does not link discovery: the dependency check cannot tell the two builds apart")
	}
	app := deps(t, "../krad-ade", "linux", "amd64")
	for _, pkg := range []string{"github.com/modelcontextprotocol/go-sdk/", "github.com/krad-ade/krad/mcpserve"} {
		if !links(app, pkg) {
			t.Errorf("cmd/krad-ade does not link %s: the dependency check cannot tell the builds apart", pkg)
		}
	}
	// krad itself, run for every command, hook and git prompt, links no MCP SDK either: its krad
	// mcp runs krad-ade's (package desktop).
	for _, goos := range []string{"linux", "darwin"} {
		got := deps(t, "../krad", goos, "amd64")
		for _, pkg := range []string{"github.com/modelcontextprotocol/go-sdk/", "github.com/krad-ade/krad/mcpserve", "net/http"} {
			if links(got, pkg) {
				t.Errorf("%s/amd64: cmd/krad links %s", goos, pkg)
			}
		}
	}
}

// script is build/linux-static/build, run from the repository's root with args.
func script(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join("build", "linux-static", "build"), args...)
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("build/linux-static/build %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return string(out)
}

// TestBuildScript runs build/linux-static/build as a release would, with a version of its own,
// and checks what it leaves: for each platform an ELF executable of the right machine, static
// (no interpreter, nothing dynamic), under 6 MB (it is copied to every host), its SHA-256 and
// its gzipped form beside it, and the version stamped, which each build prints when run: the
// other processor's under qemu-user-static.
func TestBuildScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the executables")
	}
	if got := strings.TrimSpace(script(t, "--print-version")); got != version.Build {
		t.Errorf("by default the script stamps %q, want internal/version's %q", got, version.Build)
	}

	// A version that would split -ldflags is refused before anything is built.
	bad := exec.Command(filepath.Join("build", "linux-static", "build"), "--version", "1.0 -X main.x=y", t.TempDir())
	bad.Dir = filepath.Join("..", "..")
	if msg, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(msg), "is not like 1.2.3") {
		t.Errorf("--version with a space: got %v, %q, want a refusal", err, msg)
	}

	const stamped = "9.8.7-test.1"
	dir := t.TempDir()
	out := script(t, "--version", stamped, dir)
	t.Logf("build/linux-static/build said:\n%s", out)
	for _, tt := range []struct {
		arch    string
		machine elf.Machine
	}{{"amd64", elf.EM_X86_64}, {"arm64", elf.EM_AARCH64}} {
		t.Run(tt.arch, func(t *testing.T) {
			path := filepath.Join(dir, "krad-linux-"+tt.arch)
			checkBuilt(t, out, path, tt.arch, tt.machine)
			if t.Failed() {
				return
			}

			if runtime.GOOS != "linux" {
				return
			}
			// The other processor's build runs under Debian's qemu-user-static, which needs no
			// binfmt_misc when called by name.
			run := exec.Command(path, "version", "--json")
			if tt.arch != runtime.GOARCH {
				qemu := testbin.Need(t, "qemu-"+qemuNames[tt.arch]+"-static", "qemu-user-static")
				run = exec.Command(qemu, path, "version", "--json")
			}
			v, err := run.Output()
			if err != nil {
				t.Fatalf("%s version --json: %v", strings.Join(run.Args, " "), err)
			}
			var got struct {
				Version       string `json:"version"`
				VariablesOnly bool   `json:"variables_only"`
			}
			if err := json.Unmarshal(v, &got); err != nil {
				t.Fatalf("%s version --json printed %q: %v", path, v, err)
			}
			if got.Version != stamped || !got.VariablesOnly {
				t.Errorf("%s version --json: got %s, want version %q, variables only", path, v, stamped)
			}
		})
	}
	if t.Failed() {
		return
	}
	// Only the two binaries and their sums: the script's work folder is gone.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"krad-linux-amd64", "krad-linux-amd64.gz", "krad-linux-amd64.sha256", "krad-linux-arm64", "krad-linux-arm64.gz", "krad-linux-arm64.sha256"}; !slices.Equal(names, want) {
		t.Errorf("the folder holds %v, want %v", names, want)
	}
}

// checkBuilt checks what build/linux-static/build left at path for arch, and what it said (out):
// an ELF executable of the right machine, static (no interpreter, nothing dynamic), under 10 MB,
// its size said, its SHA-256 beside it in sha256sum's format.
func checkBuilt(t *testing.T, out, path, arch string, machine elf.Machine) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) >= 6_000_000 {
		t.Errorf("%s is %d bytes, want under 6 MB", path, len(b))
	}
	if !strings.Contains(out, fmt.Sprintf("krad-linux-%s  %.2f MB (%d bytes)", arch, float64(len(b))/1e6, len(b))) {
		t.Errorf("the script did not print the size of krad-linux-%s (%d bytes)", arch, len(b))
	}

	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s is not ELF: %v", path, err)
	}
	if f.Class != elf.ELFCLASS64 || f.Machine != machine || f.Type != elf.ET_EXEC {
		t.Errorf("got %s %s %s, want ELFCLASS64 %s ET_EXEC", f.Class, f.Machine, f.Type, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %s program header: it is not static", path, p.Type)
		}
	}
	if s := f.Section(".dynamic"); s != nil {
		t.Errorf("%s has a .dynamic section: it is not static", path)
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) != 0 {
		t.Errorf("%s imports libraries %v (%v), want none", path, libs, err)
	}

	sum, err := os.ReadFile(path + ".sha256")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%x  krad-linux-%s\n", sha256.Sum256(b), arch); string(sum) != want {
		t.Errorf("got %s.sha256 %q, want %q", path, sum, want)
	}
	// Its gzipped form, which krad-ade sends to hosts, unpacks to the very same bytes.
	gz, err := os.Open(path + ".gz")
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatalf("%s.gz: %v", path, err)
	}
	if unpacked, err := io.ReadAll(zr); err != nil || !bytes.Equal(unpacked, b) {
		t.Errorf("%s.gz unpacks to %d bytes (%v), want the binary's %d, the same", path, len(unpacked), err, len(b))
	}
}

// macTools are the programs build/linux-static/build and scripts/lib.sh may run that a Mac has
// too (with Xcode's command-line tools, for git, which go build asks for the build's VCS stamp),
// in the POSIX forms the script limits itself to. Not sha256sum, ldd, stat or readelf: a Mac has
// none of them (it has a BSD stat whose flags differ from GNU's).
var macTools = []string{"bash", "dirname", "sed", "awk", "mkdir", "mktemp", "mv", "rm", "wc", "tr",
	"file", "shasum", "uname", "id", "git", "cat", "head", "gzip", "cmp"}

// TestBuildScriptPortable runs build/linux-static/build with a PATH that holds only the programs
// a Mac has (macTools, and Go), so that a Mac user's first SSH environment gets its static krad as
// on Linux: the script must take shasum for sha256sum, do without ldd, and use no GNU-only flag.
// What it leaves is checked as TestBuildScript checks it.
func TestBuildScriptPortable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the executables")
	}
	bin := t.TempDir()
	for _, name := range macTools {
		path := testbin.Need(t, name, map[string]string{"shasum": "perl", "file": "file", "git": "git"}[name])
		if err := os.Symlink(path, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	goroot, err := exec.Command(gobin, "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(bin, "bash"), filepath.Join("build", "linux-static", "build"), "--version", "9.8.7-test.1", dir)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+filepath.Dir(gobin), "GOROOT="+strings.TrimSpace(string(goroot)))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build/linux-static/build with a Mac's tools only: %v\n%s", err, out)
	}
	t.Logf("build/linux-static/build said:\n%s", out)
	if !strings.Contains(string(out), "no ldd here") {
		t.Errorf("the script did not say it went without ldd:\n%s", out)
	}
	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		checkBuilt(t, string(out), filepath.Join(dir, "krad-linux-"+arch), arch, machine)
	}
}
