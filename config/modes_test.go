//go:build unix

package config

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// nobody is the second user of the tests that need one: a config file or folder of another user.
const nobody = 65534

// tree is a config folder in a folder of the test's own: top/krad-ade/config.toml.
type tree struct {
	top, dir, file string
}

func newTree(t *testing.T) tree {
	t.Helper()
	top := t.TempDir()
	tr := tree{top: top, dir: filepath.Join(top, "krad-ade")}
	tr.file = filepath.Join(tr.dir, FileName)
	if err := os.Mkdir(tr.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tr.file, []byte("discovery = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return tr
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// wantModeError checks that err is a *ModeError about path whose message says part and whose fix
// is fix.
func wantModeError(t *testing.T, err error, path, part, fix string) {
	t.Helper()
	var me *ModeError
	if !errors.As(err, &me) {
		t.Fatalf("got %v (%T), want a *ModeError about %s", err, err, path)
	}
	if me.Path != path || !strings.Contains(me.Error(), part) || me.Fix != fix {
		t.Errorf("got %q about %s (fix %q), want one about %s saying %q (fix %q)", me.Error(), me.Path, me.Fix, path, part, fix)
	}
	if !strings.Contains(me.Error(), "commands krad-ade runs as you") {
		t.Errorf("%q does not say why it matters", me.Error())
	}
}

// TestLoadChecksModes: config.toml is read only from a file and a folder that no one but the
// user can write, as sshd's StrictModes reads ~/.ssh.
func TestLoadChecksModes(t *testing.T) {
	t.Run("the user's own", func(t *testing.T) {
		tr := newTree(t)
		chmod(t, tr.file, 0o644) // readable by others is fine: the file holds no secret
		chmod(t, tr.dir, 0o755)
		if got, err := Load(tr.file); err != nil || got.Discovery {
			t.Errorf("got %+v, %v; want discovery off", got, err)
		}
	})
	for _, mode := range []os.FileMode{0o666, 0o620, 0o602} {
		t.Run("file mode "+mode.String(), func(t *testing.T) {
			tr := newTree(t)
			chmod(t, tr.file, mode)
			_, err := Load(tr.file)
			wantModeError(t, err, tr.file, "config file "+tr.file+" is writable by", "chmod go-w "+tr.file)
		})
	}
	for _, mode := range []os.FileMode{0o777, 0o770, 0o703} {
		t.Run("folder mode "+mode.String(), func(t *testing.T) {
			tr := newTree(t)
			chmod(t, tr.dir, mode)
			_, err := Load(tr.file)
			wantModeError(t, err, tr.dir, "config folder "+tr.dir+" is writable by", "chmod go-w "+tr.dir)
			// The folder is checked before anything in it, even when there is no config.toml.
			os.Remove(tr.file)
			_, err = Load(tr.file)
			wantModeError(t, err, tr.dir, "config folder "+tr.dir+" is writable by", "chmod go-w "+tr.dir)
		})
	}
	t.Run("a folder above, writable by others", func(t *testing.T) {
		tr := newTree(t)
		chmod(t, tr.top, 0o777)
		_, err := Load(tr.file)
		wantModeError(t, err, tr.top, "a folder above the config folder, is writable by its group and every user (mode 0777)", "chmod go-w "+tr.top)
	})
	t.Run("a folder above, sticky", func(t *testing.T) {
		tr := newTree(t)
		chmod(t, tr.top, 0o777|os.ModeSticky) // as /tmp: others cannot take or replace our folder
		if _, err := Load(tr.file); err != nil {
			t.Errorf("under a sticky folder: %v", err)
		}
	})
	t.Run("a path that needs quoting", func(t *testing.T) {
		tr := newTree(t)
		odd := filepath.Join(tr.top, "it's here")
		if err := os.Rename(tr.dir, odd); err != nil {
			t.Fatal(err)
		}
		chmod(t, odd, 0o777)
		_, err := Load(filepath.Join(odd, FileName))
		wantModeError(t, err, odd, "is writable by", `chmod go-w '`+tr.top+`/it'\''s here'`)
	})
	t.Run("not a regular file", func(t *testing.T) {
		tr := newTree(t)
		os.Remove(tr.file)
		if err := syscall.Mkfifo(tr.file, 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := Load(tr.file); done <- err }()
		select {
		case err := <-done:
			var me *ModeError
			if !errors.As(err, &me) || !strings.Contains(err.Error(), "is not a regular file") {
				t.Errorf("a FIFO: got %v, want a *ModeError saying it is not a regular file", err)
			}
		case <-time.After(patience):
			t.Fatal("Load blocked on a FIFO")
		}
	})
	t.Run("a symlink to a file of the user's", func(t *testing.T) {
		tr := newTree(t)
		dotfiles := filepath.Join(tr.top, "dotfiles")
		if err := os.Mkdir(dotfiles, 0o755); err != nil {
			t.Fatal(err)
		}
		real := filepath.Join(dotfiles, "krad.toml")
		if err := os.Rename(tr.file, real); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, tr.file); err != nil {
			t.Fatal(err)
		}
		if got, err := Load(tr.file); err != nil || got.Discovery {
			t.Errorf("got %+v, %v; want discovery off", got, err)
		}
		// The file it leads to is checked, and the folders above it.
		chmod(t, real, 0o666)
		_, err := Load(tr.file)
		wantModeError(t, err, tr.file, "is writable by", "chmod go-w "+tr.file)
		chmod(t, real, 0o600)
		chmod(t, dotfiles, 0o777)
		_, err = Load(tr.file)
		wantModeError(t, err, dotfiles, "a folder above the config folder, is writable by", "chmod go-w "+dotfiles)
	})
	t.Run("a symlinked config folder", func(t *testing.T) {
		tr := newTree(t)
		real := filepath.Join(tr.top, "real")
		if err := os.Rename(tr.dir, real); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, tr.dir); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(tr.file); err != nil {
			t.Errorf("through a symlinked folder: %v", err)
		}
		chmod(t, real, 0o777)
		_, err := Load(tr.file)
		wantModeError(t, err, tr.dir, "config folder "+tr.dir+" is writable by", "chmod go-w "+tr.dir)
	})
}

// TestLoadRefusesAnotherUsersFiles: a config file, config folder or folder above owned by a real
// second user (uid 65534) is refused; root is allowed above the folder.
func TestLoadRefusesAnotherUsersFiles(t *testing.T) {
	testbin.NeedRoot(t, "giving files to uid 65534")
	chown := func(t *testing.T, path string, uid int) {
		t.Helper()
		if err := os.Lchown(path, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("config.toml", func(t *testing.T) {
		tr := newTree(t)
		chown(t, tr.file, nobody)
		_, err := Load(tr.file)
		wantModeError(t, err, tr.file, "config file "+tr.file+" is owned by uid 65534, not by you (uid 0)",
			"if it is yours, sudo chown 0 "+tr.file+"; if not, move it away")
	})
	t.Run("the config folder", func(t *testing.T) {
		tr := newTree(t)
		chown(t, tr.dir, nobody)
		_, err := Load(tr.file)
		wantModeError(t, err, tr.dir, "config folder "+tr.dir+" is owned by uid 65534", "if it is yours, sudo chown 0 "+tr.dir+"; if not, move it away")
	})
	t.Run("a folder above", func(t *testing.T) {
		tr := newTree(t)
		chown(t, tr.top, nobody)
		_, err := Load(tr.file)
		wantModeError(t, err, tr.top, "a folder above the config folder, is owned by uid 65534, neither you (uid 0) nor root",
			"keep the config folder in folders that only you or root own (krad-ade --config-dir DIR)")
	})
	t.Run("a symlink to another user's file", func(t *testing.T) {
		tr := newTree(t)
		theirs := filepath.Join(tr.top, "theirs.toml")
		if err := os.Rename(tr.file, theirs); err != nil {
			t.Fatal(err)
		}
		chown(t, theirs, nobody)
		if err := os.Symlink(theirs, tr.file); err != nil {
			t.Fatal(err)
		}
		_, err := Load(tr.file)
		wantModeError(t, err, tr.file, "is owned by uid 65534", "if it is yours, sudo chown 0 "+tr.file+"; if not, move it away")
	})
	t.Run("written by the second user, through a folder they may write", func(t *testing.T) {
		// What the check is for: another user plants config.toml in a group-writable folder.
		tr := newTree(t)
		os.Remove(tr.file)
		chmod(t, tr.dir, 0o777)
		chmod(t, tr.top, 0o711) // and the folders above, for it to pass through
		chmod(t, filepath.Dir(tr.top), 0o711)
		asNobody(t, "sh", "-c", `printf '[[terminal]]\ncommand = "id > /tmp/owned"\n' > "$1"`, "sh", tr.file)
		_, err := Load(tr.file)
		wantModeError(t, err, tr.dir, "config folder "+tr.dir+" is writable by", "chmod go-w "+tr.dir)
		chmod(t, tr.dir, 0o700) // the folder fixed, the file is still theirs
		_, err = Load(tr.file)
		wantModeError(t, err, tr.file, "is owned by uid 65534", "if it is yours, sudo chown 0 "+tr.file+"; if not, move it away")
	})
}

// TestWatchKeepsTheLastGoodConfigOnBadModes: while the app runs, a config.toml that others could
// have written changes nothing, is reported with its fix, and is applied once the modes are fixed.
func TestWatchKeepsTheLastGoodConfigOnBadModes(t *testing.T) {
	tr := newTree(t)
	w := startWatch(t, tr.file, 20*time.Millisecond, cfg(false))
	w.wantQuiet(t, 100*time.Millisecond)

	write(t, tr.file, "discovery = true\n")
	w.wantChange(t, cfg(true))

	if err := os.WriteFile(tr.file, []byte("discovery = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	chmod(t, tr.file, 0o666)
	select {
	case err := <-w.errs:
		wantModeError(t, err, tr.file, "is writable by", "chmod go-w "+tr.file)
	case c := <-w.changes:
		t.Fatalf("a config.toml others can write was applied: %+v", c)
	case <-time.After(patience):
		t.Fatal("no error reported for a config.toml others can write")
	}
	w.wantQuiet(t, 100*time.Millisecond)

	chmod(t, tr.file, 0o600)
	w.wantChange(t, cfg(false))
}

// asNobody runs a command as uid 65534, a real second user.
func asNobody(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid %d: %s %v: %v: %s", nobody, name, args, err, out)
	}
}

// TestRelativePathsCheckTheFoldersAbove: a config folder named by a relative path (--config-dir
// krad-ade, run from a folder inside one that every user can write) is refused like the same
// folder named by its absolute path: the folders above the current folder count too.
func TestRelativePathsCheckTheFoldersAbove(t *testing.T) {
	top := t.TempDir()
	work := filepath.Join(top, "work")
	dir := filepath.Join(work, "krad-ade")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("discovery = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	chmod(t, work, 0o700)
	chmod(t, top, 0o777) // not sticky: another user could rename work and put a folder of theirs there
	t.Chdir(work)
	wantModeError(t, CheckFolder("krad-ade"), top, "is writable by its group and every user", "chmod go-w "+top)
	_, err := Load(filepath.Join("krad-ade", FileName))
	wantModeError(t, err, top, "is writable by its group and every user", "chmod go-w "+top)
}
