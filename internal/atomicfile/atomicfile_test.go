package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// alone fails unless name is all that dir holds: no temporary file was left behind.
func alone(t *testing.T, dir, name string) {
	t.Helper()
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 || entries[0].Name() != name {
		t.Errorf("the folder holds %v (%v), want %s alone", entries, err, name)
	}
}

// TestWriteFile: each write replaces the contents and sets the mode asked for (the temporary file
// is created 0600), and leaves no temporary file.
func TestWriteFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no permission bits on Windows")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	for _, tt := range []struct {
		data string
		perm fs.FileMode
	}{{"first", 0o600}, {"second, longer", 0o644}, {"3", 0o600}, {"fourth, unsynced", 0o640}, {"5", 0o600}} {
		write := WriteFile
		if strings.Contains(tt.data, "unsynced") || tt.data == "5" {
			write = WriteFileUnsynced
		}
		if err := write(path, []byte(tt.data), tt.perm); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != tt.data {
			t.Errorf("got %q, %v; want %q", b, err, tt.data)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode() != tt.perm {
			t.Errorf("got mode %v, %v; want %v", fi.Mode(), err, tt.perm)
		}
		alone(t, dir, "f.json")
	}
}

func TestWriteFileRefuses(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, path string)
		want  error
	}{
		{"a symbolic link", func(t *testing.T, path string) {
			victim := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, path); err != nil {
				t.Skipf("no symbolic links here: %v", err)
			}
		}, ErrSymlink},
		{"a folder", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, ErrNotRegular},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			tt.setup(t, path)
			before, _ := os.Lstat(path)
			err := WriteFile(path, []byte("new"), 0o600)
			if err2 := WriteFileUnsynced(path, []byte("new"), 0o600); !errors.Is(err2, tt.want) {
				t.Errorf("WriteFileUnsynced: got %v, want %v", err2, tt.want)
			}
			var pe *fs.PathError
			if !errors.Is(err, tt.want) || !errors.As(err, &pe) || pe.Op != "write" || pe.Path != path {
				t.Fatalf("got %v, want write %s: %v", err, path, tt.want)
			}
			if want := "write " + path + ": " + tt.want.Error(); err.Error() != want {
				t.Errorf("got %q, want %q", err, want)
			}
			if after, err := os.Lstat(path); err != nil || after.Mode() != before.Mode() {
				t.Errorf("the target is now %v, %v; want it left as it was (%v)", after.Mode(), err, before.Mode())
			}
			alone(t, dir, "f")
		})
	}
}

func TestWriteFailureLeavesTheOldFile(t *testing.T) {
	errFull := errors.New("no space left on device")
	for _, tt := range []struct {
		name string
		put  func(*os.File, []byte) error
	}{
		{"disk full halfway", func(fh *os.File, data []byte) error {
			if _, err := fh.Write(data[:len(data)/2]); err != nil {
				return err
			}
			return errFull
		}},
		{"sync fails", func(fh *os.File, data []byte) error {
			if _, err := fh.Write(data); err != nil {
				return err
			}
			return errFull
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			if err := WriteFile(path, []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := write(path, []byte("the new contents"), 0o600, tt.put, true); !errors.Is(err, errFull) {
				t.Errorf("got error %v, want %v", err, errFull)
			}
			if b, err := os.ReadFile(path); err != nil || string(b) != "old" {
				t.Errorf("got %q, %v; want the old file", b, err)
			}
			alone(t, dir, "f")
		})
	}
}
