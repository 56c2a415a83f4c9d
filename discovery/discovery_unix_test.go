//go:build unix

package discovery

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/krad-ade/krad/internal/atomicfile"
	"github.com/krad-ade/krad/kradtest/testbin"
)

func TestWriteModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "krad-ade")
	if err := Write(dir, sample(t)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want fs.FileMode
	}{{dir, 0o700}, {filepath.Join(dir, FileName), 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != c.want {
			t.Errorf("%s: got mode %04o, want %04o", c.path, got, c.want)
		}
	}
}

func TestReadRefusesOtherOwner(t *testing.T) {
	testbin.NeedRoot(t, "giving a file away")
	dir := t.TempDir()
	if err := Write(dir, sample(t)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("got error %v, want one about the owner", err)
	}
}

func TestReadRefusesFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	// A FIFO would block a plain open until a writer came.
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("got error %v, want one about a regular file", err)
	}
}

func TestOpenRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, FileName)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	// As if the symlink had been swapped in after Read looked.
	if fh, err := open(link); err != atomicfile.ErrSymlink {
		if fh != nil {
			fh.Close()
		}
		t.Errorf("got error %v, want %v", err, atomicfile.ErrSymlink)
	}
}
