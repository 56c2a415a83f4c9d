//go:build unix

package config

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/krad-ade/krad/internal/fileacl"
)

var bob = [16]byte{0xab, 0xcd, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}

// withACLs makes readACL answer from acls, by path (nil for the others), for the test.
func withACLs(t *testing.T, acls map[string][]fileacl.Entry, fail map[string]error) {
	t.Helper()
	old := readACL
	readACL = func(path string) ([]fileacl.Entry, error) {
		if err := fail[path]; err != nil {
			return nil, err
		}
		return acls[path], nil
	}
	t.Cleanup(func() { readACL = old })
}

// TestLoadChecksACLs: as macOS reads them, an ACL that lets another user write the config file,
// its folder or a folder above is refused as a mode that does; so is a config folder whose
// entries its files inherit, and an ACL that cannot be read. A home folder's own ACL (everyone:
// deny delete) passes. (On Linux, where the mode shows an ACL's grants, readACL reads none:
// here the test hands the checks macOS's answers.)
func TestLoadChecksACLs(t *testing.T) {
	tr := newTree(t)
	addFile := []fileacl.Entry{{Who: bob, Flags: fileacl.Permit, Rights: fileacl.AddFile}}
	home := []fileacl.Entry{{Flags: fileacl.Deny, Rights: fileacl.Delete}}
	fix := func(p string) string { return "chmod -N " + p + " (removes its ACL)" }

	withACLs(t, map[string][]fileacl.Entry{tr.top: home, tr.dir: home, tr.file: home}, nil)
	if _, err := Load(tr.file); err != nil {
		t.Fatalf("deny entries only: %v", err)
	}

	withACLs(t, map[string][]fileacl.Entry{tr.file: addFile}, nil)
	_, err := Load(tr.file)
	wantModeError(t, err, tr.file, "has an ACL that lets others write to it", fix(tr.file))

	withACLs(t, map[string][]fileacl.Entry{tr.dir: addFile}, nil)
	_, err = Load(tr.file)
	wantModeError(t, err, tr.dir, "has an ACL that lets others write to it", fix(tr.dir))

	withACLs(t, map[string][]fileacl.Entry{tr.top: addFile}, nil)
	_, err = Load(tr.file)
	wantModeError(t, err, tr.top, "a folder above the config folder, has an ACL that lets others write to it", fix(tr.top))

	withACLs(t, map[string][]fileacl.Entry{tr.dir: {{Who: bob, Flags: fileacl.Permit | fileacl.FileInherit, Rights: fileacl.ReadData}}}, nil)
	_, err = Load(tr.file)
	var me *ModeError
	if !errors.As(err, &me) || me.Path != tr.dir || !strings.Contains(me.Problem, "files made in it inherit") || me.Fix != fix(tr.dir) {
		t.Errorf("a config folder whose files inherit an entry: got %v, want a *ModeError about %s", err, tr.dir)
	}

	withACLs(t, nil, map[string]error{filepath.Dir(tr.top): syscall.EACCES})
	if _, err = Load(tr.file); !errors.Is(err, syscall.EACCES) {
		t.Errorf("an ACL that cannot be read: got %v, want the error", err)
	}
}
