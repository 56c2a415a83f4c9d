package remote_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/filestate"
	"github.com/krad-ade/krad/internal/version"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/remote"
	"github.com/krad-ade/krad/remote/shell"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// stat is what tells one copy of a file from another.
type stat struct {
	ino, mtime, ctime int64
	mode              os.FileMode
	nlink             uint64
}

func statOf(t *testing.T, path string) stat {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	mtime, ctime, _ := filestate.Times(fi)
	return stat{int64(st.Ino), mtime.UnixNano(), ctime.UnixNano(), fi.Mode(), uint64(st.Nlink)}
}

// entries lists a folder's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// countingHost is a Host that counts the bytes its commands read from their stdin: what went
// over the wire.
type countingHost struct {
	remote.Host
	sent int64
}

func (c *countingHost) Run(ctx context.Context, command string, stdin io.Reader) ([]byte, error) {
	if stdin != nil {
		stdin = &countingReader{r: stdin, n: &c.sent}
	}
	return c.Host.Run(ctx, command, stdin)
}

type countingReader struct {
	r io.Reader
	n *int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

// damagingHost is a Host that flips the bits of n bytes of what its commands read from stdin,
// from offset at: a copy damaged on its way, which arrives whole in size.
type damagingHost struct {
	remote.Host
	at, n int
}

func (d damagingHost) Run(ctx context.Context, command string, stdin io.Reader) ([]byte, error) {
	if stdin != nil {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, err
		}
		data = bytes.Clone(data)
		for i := d.at; i < d.at+d.n && i < len(data); i++ {
			data[i] ^= 0x55
		}
		stdin = bytes.NewReader(data)
	}
	return d.Host.Run(ctx, command, stdin)
}

func TestInstall(t *testing.T) {
	b := binary(t)
	srv, ssh := start(t, "", sshdtest.Options{})
	h := &countingHost{Host: ssh}
	ctx := context.Background()

	dir, err := remote.Install(ctx, h, b)
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	// The host has gzip: the binary went over gzipped, less than half its size, and was
	// unpacked there (the SHA-256 below is of the installed file).
	if h.sent != int64(len(b.Packed)) || h.sent >= b.Size/2 {
		t.Errorf("the install sent %d bytes, want the gzipped binary's %d (the binary is %d)", h.sent, len(b.Packed), b.Size)
	}
	want := filepath.Join(srv.Home, ".krad-ade", "bin", version.Build)
	if dir != want {
		t.Errorf("got folder %q, want %q", dir, want)
	}
	if got := entries(t, dir); !slices.Equal(got, []string{"krad", "krad-ade-agents", "krad-ade-askpass"}) {
		t.Errorf("the folder holds %q, want krad, krad-ade-agents and krad-ade-askpass only", got)
	}
	krad, agents := statOf(t, filepath.Join(dir, "krad")), statOf(t, filepath.Join(dir, "krad-ade-agents"))
	if krad.mode != 0o755 || agents.mode != 0o755 {
		t.Errorf("got modes %v and %v, want 0755", krad.mode, agents.mode)
	}
	if krad.ino != agents.ino {
		t.Errorf("krad-ade-agents is a copy, want a hard link to krad")
	}
	if askpass := statOf(t, filepath.Join(dir, "krad-ade-askpass")); askpass.ino != krad.ino || askpass.mode != 0o755 {
		t.Errorf("krad-ade-askpass is %+v, want a hard link to krad, mode 0755", askpass)
	}
	content, err := os.ReadFile(filepath.Join(dir, "krad"))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(content); hex.EncodeToString(sum[:]) != b.SHA256 {
		t.Errorf("the installed krad has another SHA-256 than the binary")
	}
	for _, d := range []string{filepath.Join(srv.Home, ".krad-ade"), filepath.Join(srv.Home, ".krad-ade", "bin"), dir} {
		if m := statOf(t, d).mode.Perm(); m != 0o700 {
			t.Errorf("%s has mode %04o, want 0700", d, m)
		}
	}

	// The installed krad runs on the host, found through the PATH of the terminals' variables.
	env := api.TerminalVars{Endpoint: "127.0.0.1:41877", TokenFile: "/t/token", BinDir: dir, Path: "/usr/local/bin:/usr/bin:/bin"}.Env(api.TerminalID{Environment: "build", Terminal: 3})
	out, err := h.Run(ctx, "env "+strings.Join(quoteAll(env), " ")+" sh -c 'krad version --json; command -v krad-ade-agents'", nil)
	if err != nil {
		t.Fatalf("krad version --json on the host: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var v struct {
		Version       string `json:"version"`
		VariablesOnly bool   `json:"variables_only"`
	}
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &v) != nil || v.Version != version.Build || !v.VariablesOnly {
		t.Errorf("got %q, want the static krad's version and the path of krad-ade-agents", out)
	}
	if len(lines) == 2 && lines[1] != filepath.Join(dir, "krad-ade-agents") {
		t.Errorf("krad-ade-agents is %q, want it in %s", lines[1], dir)
	}

	// A second install copies nothing: the files are the same files, untouched.
	dir2, err := remote.Install(ctx, h, b)
	if err != nil || dir2 != dir {
		t.Fatalf("second install: got %q, %v", dir2, err)
	}
	if got := statOf(t, filepath.Join(dir, "krad")); got != krad {
		t.Errorf("the second install touched krad: %+v, was %+v", got, krad)
	}
	if got := statOf(t, filepath.Join(dir, "krad-ade-agents")); got != agents {
		t.Errorf("the second install touched krad-ade-agents: %+v, was %+v", got, agents)
	}

	// A damaged copy is replaced, whole.
	f, err := os.OpenFile(filepath.Join(dir, "krad-ade-agents"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("x"))
	f.Close()
	if _, err := remote.Install(ctx, h, b); err != nil {
		t.Fatalf("install over a damaged copy: %v", err)
	}
	got := statOf(t, filepath.Join(dir, "krad"))
	if got.ino == krad.ino {
		t.Errorf("krad was not replaced")
	}
	if content2, _ := os.ReadFile(filepath.Join(dir, "krad-ade-agents")); !bytes.Equal(content2, content) {
		t.Errorf("krad-ade-agents was not repaired")
	}
	if got := entries(t, dir); !slices.Equal(got, []string{"krad", "krad-ade-agents", "krad-ade-askpass"}) {
		t.Errorf("the folder holds %q, want krad, krad-ade-agents and krad-ade-askpass only", got)
	}
}

func quoteAll(ss []string) []string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = shell.Quote(s)
	}
	return q
}

func TestInstallCorrupt(t *testing.T) {
	b := binary(t)
	srv, h := start(t, "", sshdtest.Options{})
	ctx := context.Background()
	dir := filepath.Join(srv.Home, ".krad-ade", "bin", version.Build)

	bad := b
	bad.SHA256 = strings.Repeat("0", 64)
	_, err := remote.Install(ctx, h, bad)
	var ce *remote.CorruptError
	if !errors.As(err, &ce) || ce.Got != b.SHA256 {
		t.Fatalf("got %v, want a *CorruptError with the real SHA-256", err)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("after a corrupt copy the folder holds %q, want nothing", got)
	}

	// A copy cut short (what arrives is shorter than the binary) is removed too: sent whole,
	// or gzipped.
	whole, err := os.ReadFile(staticKrad(t))
	if err != nil {
		t.Fatal(err)
	}
	short := b
	short.Content, short.Packed = bytes.NewReader(whole[:len(whole)/2]), nil
	if _, err := remote.Install(ctx, h, short); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("got %v, want an error about a copy cut short", err)
	}
	short = b
	short.Packed = b.Packed[:len(b.Packed)/2]
	if _, err := remote.Install(ctx, h, short); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("gzipped: got %v, want an error about a copy cut short", err)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("after a short copy the folder holds %q, want nothing", got)
	}

	// A gzip stream damaged on the way unpacks to other bytes, or fewer: refused, and removed.
	damaged := b
	damaged.Packed = bytes.Clone(b.Packed)
	for i := len(damaged.Packed) / 3; i < len(damaged.Packed)/3+64; i++ {
		damaged.Packed[i] ^= 0x55
	}
	_, err = remote.Install(ctx, h, damaged)
	if !errors.As(err, &ce) && (err == nil || !strings.Contains(err.Error(), "cut short")) {
		t.Errorf("a damaged gzip stream: got %v, want a *CorruptError or a copy cut short", err)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("after a damaged gzip stream the folder holds %q, want nothing", got)
	}

	// Over a good install, a corrupt copy leaves the good one in place.
	if _, err := remote.Install(ctx, h, b); err != nil {
		t.Fatal(err)
	}
	before := statOf(t, filepath.Join(dir, "krad"))
	if _, err := remote.Install(ctx, h, bad); !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *CorruptError", err)
	}
	if got := statOf(t, filepath.Join(dir, "krad")); got != before {
		t.Errorf("a corrupt copy touched the installed krad")
	}
	if got := entries(t, dir); !slices.Equal(got, []string{"krad", "krad-ade-agents", "krad-ade-askpass"}) {
		t.Errorf("the folder holds %q, want krad, krad-ade-agents and krad-ade-askpass only", got)
	}

}

// TestInstallDamagedOnTheWay: a copy that arrives with other bytes is caught on the host before
// it runs (gzip's own CRC for a gzipped copy, cksum's for a plain one): a *CorruptError that says
// it was not run (no SHA-256 of its own), and nothing put in place. A damaged gzip stream may
// also unpack shorter than the binary, which the host reports as a copy cut short; either way
// it did not run (a copy that ran would have said its SHA-256).
func TestInstallDamagedOnTheWay(t *testing.T) {
	b := binary(t)
	whole := b
	whole.Packed = nil
	for _, tt := range []struct {
		name  string
		bin   remote.Binary
		at, n int
		short bool // the damage may unpack short
	}{
		{"gzipped, its CRC", b, len(b.Packed) - 8, 4, false}, // unpacks whole, to the binary's bytes: gzip's check says no
		{"gzipped, its data", b, len(b.Packed) / 2, 64, true},
		{"plain", whole, 200_000, 64, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, ssh := start(t, "", sshdtest.Options{})
			_, err := remote.Install(context.Background(), damagingHost{Host: ssh, at: tt.at, n: tt.n}, tt.bin)
			var ce *remote.CorruptError
			switch {
			case tt.short && err != nil && strings.Contains(err.Error(), "cut short"):
			case !errors.As(err, &ce) || ce.Got != "" || ce.Want != b.SHA256:
				t.Fatalf("got %v, want a *CorruptError for a copy that did not run", err)
			case !strings.Contains(err.Error(), "damaged"):
				t.Errorf("got %q, want it to say the copy is damaged", err)
			}
			if got := entries(t, filepath.Join(srv.Home, ".krad-ade", "bin", version.Build)); len(got) != 0 {
				t.Errorf("after a damaged copy the folder holds %q, want nothing", got)
			}
			// The same host takes an undamaged copy.
			if _, err := remote.Install(context.Background(), ssh, tt.bin); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCksum: the CRC the app sends with a plain copy is the one the host's cksum prints.
func TestCksum(t *testing.T) {
	if _, err := exec.LookPath("cksum"); err != nil {
		t.Skip("cksum is not installed")
	}
	for _, in := range [][]byte{nil, []byte("a"), []byte("hello, world\n"), bytes.Repeat([]byte{0xff, 0, 7}, 100_000), mustRead(t, staticKrad(t))} {
		cmd := exec.Command("cksum")
		cmd.Stdin = bytes.NewReader(in)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		got, err := remote.Cksum(bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.Fields(string(out)); len(want) < 2 || want[0] != strconv.FormatUint(uint64(got), 10) || want[1] != strconv.Itoa(len(in)) {
			t.Errorf("%d bytes: cksum printed %q, we compute %d", len(in), out, got)
		}
	}
}

func TestInstallNoisyShell(t *testing.T) {
	b := binary(t)
	_, h := start(t, noisyBashrc, sshdtest.Options{})
	for range 2 {
		if _, err := remote.Install(context.Background(), h, b); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInstallRefuses(t *testing.T) {
	b := binary(t)
	ctx := context.Background()

	t.Run("symlinked bin", func(t *testing.T) {
		srv, h := start(t, "", sshdtest.Options{})
		elsewhere := t.TempDir()
		os.Mkdir(filepath.Join(srv.Home, ".krad-ade"), 0o700)
		if err := os.Symlink(elsewhere, filepath.Join(srv.Home, ".krad-ade", "bin")); err != nil {
			t.Fatal(err)
		}
		_, err := remote.Install(ctx, h, b)
		var re *shell.RefusedError
		if !errors.As(err, &re) || re.Path != "~/.krad-ade/bin" || re.Reason != "symlink" {
			t.Fatalf("got %v, want ~/.krad-ade/bin refused as a symbolic link", err)
		}
		if !strings.Contains(err.Error(), "~/.krad-ade/bin is a symbolic link: refused; remove it") {
			t.Errorf("got %q", err)
		}
		if got := entries(t, elsewhere); len(got) != 0 {
			t.Errorf("the link's target holds %q, want nothing", got)
		}
	})

	t.Run("another user's version folder", func(t *testing.T) {
		testbin.NeedRoot(t, "making a folder that another user owns")
		srv, h := start(t, "", sshdtest.Options{})
		dir := filepath.Join(srv.Home, ".krad-ade", "bin", version.Build)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		_, err := remote.Install(ctx, h, b)
		var re *shell.RefusedError
		if !errors.As(err, &re) || re.Reason != "owner" {
			t.Fatalf("got %v, want the folder refused for its owner", err)
		}
		if got := entries(t, dir); len(got) != 0 {
			t.Errorf("the folder holds %q, want nothing", got)
		}
	})
}

func TestInstallNoexec(t *testing.T) {
	b := binary(t)
	srv, h := start(t, "", sshdtest.Options{})
	bin := filepath.Join(srv.Home, ".krad-ade", "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "noexec,mode=700,size=64m", "tmpfs", bin).CombinedOutput(); err != nil {
		t.Skipf("mounting a noexec tmpfs needs root and mount rights: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", bin).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", bin, err, out)
		}
	})
	_, err := remote.Install(context.Background(), h, b)
	if !errors.Is(err, remote.ErrNoexec) {
		t.Fatalf("got %v, want ErrNoexec", err)
	}
	if got := entries(t, filepath.Join(bin, version.Build)); len(got) != 0 {
		t.Errorf("the folder holds %q, want nothing put in place", got)
	}
}

// TestInstallWithoutSha256sum runs the install on a host whose PATH has the tools the scripts use,
// but neither sha256sum nor shasum: the look's check falls back to openssl (the copy's own check
// needs none of them). Nor gzip: the binary goes over as it is, checked by cksum before it runs;
// without cksum either, by its size, and then by the SHA-256 it says of itself.
func TestInstallWithoutSha256sum(t *testing.T) {
	b := binary(t)
	for _, withCksum := range []bool{true, false} {
		t.Run(fmt.Sprintf("cksum=%v", withCksum), func(t *testing.T) {
			names := []string{"sh", "uname", "mkdir", "chmod", "cat", "wc", "mv", "rm", "ln", "cp", "openssl", "env"}
			if withCksum {
				names = append(names, "cksum")
			}
			tools := t.TempDir()
			for _, name := range names {
				p, err := exec.LookPath(name)
				if err != nil {
					t.Skipf("%s is not installed", name)
				}
				if err := os.Symlink(p, filepath.Join(tools, name)); err != nil {
					t.Fatal(err)
				}
			}
			srv, ssh := start(t, "", sshdtest.Options{Env: []string{"PATH=" + tools}})
			h := &countingHost{Host: ssh}
			ctx := context.Background()
			if out, err := h.Run(ctx, "command -v sha256sum shasum gzip; echo $PATH", nil); err != nil || string(out) != tools+"\n" {
				t.Fatalf("the host's PATH: got %q, %v; want only %s", out, err, tools)
			}
			dir, err := remote.Install(ctx, h, b)
			if err != nil {
				t.Fatal(err)
			}
			if h.sent != b.Size {
				t.Errorf("to a host without gzip the install sent %d bytes, want the binary's %d", h.sent, b.Size)
			}
			if got := mustRead(t, filepath.Join(dir, "krad")); !bytes.Equal(got, mustRead(t, staticKrad(t))) {
				t.Error("the installed krad is not the binary")
			}
			before := statOf(t, filepath.Join(dir, "krad"))
			if _, err := remote.Install(ctx, h, b); err != nil {
				t.Fatal(err)
			}
			if statOf(t, filepath.Join(dir, "krad")) != before {
				t.Errorf("the second install copied again: openssl's SHA-256 did not match")
			}
			os.Remove(filepath.Join(tools, "openssl"))
			os.RemoveAll(filepath.Join(srv.Home, ".krad-ade"))
			if _, err := remote.Install(ctx, h, b); err == nil || !strings.Contains(err.Error(), "none of sha256sum, shasum and openssl") {
				t.Errorf("without any SHA-256 tool: got %v, want an error that names them", err)
			}
		})
	}
}

func TestReadBinary(t *testing.T) {
	path := staticKrad(t)
	b, err := remote.ReadBinary(path, thisPlatform, version.Build)
	if err != nil {
		t.Fatal(err)
	}
	whole := mustRead(t, path)
	if got := gunzip(t, b.Packed); !bytes.Equal(got, whole) || len(b.Packed) >= len(whole)/2 {
		t.Errorf("Packed is %d bytes and unpacks to %d bytes of the binary's %d, want it gzipped, under half", len(b.Packed), len(got), len(whole))
	}

	// The .gz beside it, as build/linux-static/build writes it, is taken as it is when it unpacks
	// to the binary, and ignored when it does not (left by another build).
	dir := t.TempDir()
	copied := filepath.Join(dir, thisPlatform.StaticName())
	if err := os.WriteFile(copied, whole, 0o755); err != nil {
		t.Fatal(err)
	}
	var best bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&best, gzip.BestCompression)
	zw.Write(whole)
	zw.Close()
	if err := os.WriteFile(remote.PackedName(copied), best.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := remote.ReadBinary(copied, thisPlatform, version.Build); err != nil || !bytes.Equal(b.Packed, best.Bytes()) {
		t.Errorf("with its .gz beside it: got %d packed bytes, %v; want the .gz's %d", len(b.Packed), err, best.Len())
	}
	var stale bytes.Buffer
	zw = gzip.NewWriter(&stale)
	zw.Write(whole[:len(whole)-1])
	zw.Close()
	if err := os.WriteFile(remote.PackedName(copied), stale.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := remote.ReadBinary(copied, thisPlatform, version.Build); err != nil || !bytes.Equal(gunzip(t, b.Packed), whole) {
		t.Errorf("with a stale .gz beside it: got %v, or Packed does not unpack to the binary", err)
	}

	other := remote.Platform{OS: "linux", Arch: "arm64"}
	if thisPlatform.Arch == "arm64" {
		other.Arch = "amd64"
	}
	if _, err := remote.ReadBinary(path, other, version.Build); err == nil || !strings.Contains(err.Error(), "built for") {
		t.Errorf("for %v: got %v, want an error about the processor", other, err)
	}
	self, err := os.Executable() // the test binary: built with cgo on, and dynamic
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.ReadBinary(self, thisPlatform, version.Build); err == nil {
		t.Logf("the test binary counts as static here (cgo off?)")
	}
	if _, err := remote.ReadBinary(filepath.Join(t.TempDir(), "missing"), thisPlatform, version.Build); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want ErrNotExist", err)
	}
}

func TestInstallChecksItsInput(t *testing.T) {
	b := binary(t)
	for _, tt := range []struct {
		name string
		edit func(*remote.Binary)
	}{
		{"no version", func(b *remote.Binary) { b.Version = "" }},
		{"version with a slash", func(b *remote.Binary) { b.Version = "../x" }},
		{"version starting with a dot", func(b *remote.Binary) { b.Version = ".." }},
		{"version with a quote", func(b *remote.Binary) { b.Version = "1'2" }},
		{"no content", func(b *remote.Binary) { b.Content = nil }},
		{"short sha", func(b *remote.Binary) { b.SHA256 = "abc" }},
		{"upper case sha", func(b *remote.Binary) { b.SHA256 = strings.ToUpper(b.SHA256) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bb := b
			tt.edit(&bb)
			if _, err := remote.Install(context.Background(), nil, bb); err == nil {
				t.Errorf("got no error")
			}
		})
	}
}

// TestLookSkipsWhatItVerified: a look given what the last install verified neither hashes nor
// runs the files while they are those very files, and hashes them again as soon as one of
// them changed (a touch is enough: its change time moved), copying the binary again when its
// bytes are not ours. Hashing a file, or running it, opens it: the host's kernel counts the opens
// (inotify). The look that does hash runs no sha256sum: krad hashes itself as it runs.
func TestLookSkipsWhatItVerified(t *testing.T) {
	b := binary(t)
	tools := t.TempDir()
	counted := filepath.Join(tools, "runs")
	real, err := exec.LookPath("sha256sum")
	if err != nil {
		t.Skip("sha256sum is not installed")
	}
	wrapper := "#!/bin/sh\necho run >> '" + counted + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(tools, "sha256sum"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	srv, h := start(t, "", sshdtest.Options{Env: []string{"PATH=" + tools + ":/usr/bin:/bin"}})
	ctx := context.Background()
	sha256sums := func() int {
		data, _ := os.ReadFile(counted)
		return strings.Count(string(data), "run\n")
	}
	look := func(last remote.Verified) (string, remote.Verified) {
		t.Helper()
		step := remote.LookStep(b.Version, last)
		out, err := h.Run(ctx, step.Script.Command(step.Args...), nil)
		rep, err := step.Script.Result(out, err)
		found, err := remote.ReadLook(b.Version, rep, err)
		if err != nil {
			t.Fatal(err)
		}
		dir, now, err := remote.InstallFound(ctx, h, b, found, last)
		if err != nil {
			t.Fatal(err)
		}
		return dir, now
	}
	dir, v := look(remote.Verified{}) // copies krad over, and knows the files from now on
	if v.SHA256 != b.SHA256 || v.ID == "" {
		t.Fatalf("verified %+v, want the binary's SHA-256 and the files' identity", v)
	}
	if dir != filepath.Join(srv.Home, ".krad-ade", "bin", version.Build) {
		t.Fatalf("installed in %s", dir)
	}
	opened := watchOpens(t, dir)
	if again, v2 := look(v); again != dir || v2 != v {
		t.Errorf("the look of verified files gave %q, %+v; want %q, %+v", again, v2, dir, v)
	}
	if n := opened.count(); n != 0 {
		t.Errorf("the look of verified files opened them %d times, want none (neither hashed nor run)", n)
	}
	// A touch changes no byte, but the look cannot know it: it hashes again, and copies nothing.
	now := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(dir, "krad"), now, now); err != nil {
		t.Fatal(err)
	}
	ino := statOf(t, filepath.Join(dir, "krad")).ino
	before, sums := opened.count(), sha256sums()
	_, v3 := look(v)
	if opened.count() == before || v3.ID == v.ID {
		t.Errorf("after a touch the look opened the files %d times and verified %+v, want them hashed, and a new identity", opened.count()-before, v3)
	}
	if n := sha256sums() - sums; n != 0 {
		t.Errorf("after a touch the look ran sha256sum %d times, want none: krad hashes itself", n)
	}
	if statOf(t, filepath.Join(dir, "krad")).ino != ino {
		t.Error("after a touch the look copied krad again")
	}
	// Other bytes of the same size, in place: the look hashes, finds them not ours, copies ours.
	data, err := os.ReadFile(filepath.Join(dir, "krad"))
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 0xff
	if err := os.WriteFile(filepath.Join(dir, "krad"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	look(v3)
	if got, _ := os.ReadFile(filepath.Join(dir, "krad")); sha256.Sum256(got) != sha256.Sum256(mustRead(t, staticKrad(t))) {
		t.Error("a changed krad was not replaced by the app's")
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
