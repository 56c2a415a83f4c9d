package config

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/krad-ade/krad/internal/fileacl"
	"github.com/krad-ade/krad/internal/fileowner"
	"github.com/krad-ade/krad/remote/shell"
)

// ModeError says that config.toml, its folder, or a folder above them can be changed by someone
// other than the user, or is not what it should be; nothing in it was read.
type ModeError struct {
	// Path is the file or folder at fault.
	Path string
	// Problem says what is wrong with it, and why that matters.
	Problem string
	// Fix is the next step, a command when there is one: "chmod go-w /home/u/.config/krad-ade".
	Fix string
}

func (e *ModeError) Error() string { return e.Problem }

// CheckFolder checks the config folder dir as OpenSSH's StrictModes checks ~/.ssh, since whoever
// can write config.toml chooses the commands the app runs as the user: dir must be a folder the
// user owns that neither its group nor other users can write, and every folder above it, on the
// way dir names and on the way its symlinks lead, must be the user's or root's and not writable by
// others, unless it is sticky (/tmp: others may add names there, but not take or replace ours).
// Its errors are *ModeError, or say that dir cannot be looked at. A relative dir is taken from
// the current folder, whose folders above are checked too.
//
// On macOS, where an ACL may grant what the permission bits do not show, it reads each one's ACL
// too (package fileacl): an allow entry with a write right counts as a writable mode does, and the config
// folder may hold no allow entry that its files (api.json among them) would inherit.
//
// On Windows, where the permission bits mean nothing, it checks only that dir is a folder.
func CheckFolder(dir string) error {
	// The walk up stops at the root of the path it is given: "." for a relative one.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("config folder: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("config folder: %w", err)
	}
	if !fi.IsDir() {
		return &ModeError{Path: dir, Problem: fmt.Sprintf("config folder %s is not a folder", dir),
			Fix: "move it away; krad-ade makes the folder when it is missing"}
	}
	if err := checkOwn("config folder", dir, fi); err != nil {
		return err
	}
	return checkAbove(dir)
}

// checkFile checks what was opened as config.toml (path, in a folder CheckFolder passed): a
// regular file of the user's that neither its group nor others can write. When path is a symlink,
// the folders above the file it leads to are checked as CheckFolder checks those above the
// folder. fi is the opened file's.
func checkFile(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return &ModeError{Path: path, Problem: fmt.Sprintf("config file %s is not a regular file", path),
			Fix: "replace it with a file of your own"}
	}
	if err := checkOwn("config file", path, fi); err != nil {
		return err
	}
	if li, err := os.Lstat(path); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", FileName, err)
		}
		return checkAbove(real)
	}
	return nil
}

// readACL reads a file's ACL: on macOS only (package fileacl). Tests swap it.
var readACL = fileacl.Read

// checkOwn checks a file or folder that must be the user's and writable by the user alone, by
// its mode and, on macOS, its ACL.
func checkOwn(what, path string, fi fs.FileInfo) error {
	if !strictModes {
		return nil
	}
	if uid, me := fileowner.Of(fi), os.Getuid(); uid != me {
		return &ModeError{Path: path,
			Problem: fmt.Sprintf("%s %s is owned by uid %d, not by you (uid %d): its owner could choose the commands krad-ade runs as you", what, path, uid, me),
			Fix:     fmt.Sprintf("if it is yours, sudo chown %d %s; if not, move it away", me, shell.Word(path))}
	}
	if w := writers(fi.Mode()); w != "" {
		return &ModeError{Path: path,
			Problem: fmt.Sprintf("%s %s is writable by %s (mode %04o): they could choose the commands krad-ade runs as you", what, path, w, fi.Mode().Perm()),
			Fix:     "chmod go-w " + shell.Word(path)}
	}
	aces, err := readACL(path)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if fileacl.Writes(aces) != 0 {
		return &ModeError{Path: path,
			Problem: fmt.Sprintf("%s %s has an ACL that lets others write to it (ls -led shows it): they could choose the commands krad-ade runs as you", what, path),
			Fix:     "chmod -N " + shell.Word(path) + " (removes its ACL)"}
	}
	if fi.IsDir() && fileacl.Inherits(aces) {
		return &ModeError{Path: path,
			Problem: fmt.Sprintf("%s %s has an ACL that the files made in it inherit (ls -led shows it): api.json, which holds the bus token, would be opened to whoever it names", what, path),
			Fix:     "chmod -N " + shell.Word(path) + " (removes its ACL)"}
	}
	return nil
}

// checkAbove checks every folder above path, on the way path names (where its symlinks are) and
// on the way they lead: each must be the user's or root's, and writable by no one else unless it
// is sticky.
func checkAbove(path string) error {
	if !strictModes {
		return nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("config folder: %w", err)
	}
	seen := map[string]bool{}
	me := os.Getuid()
	for _, p := range []string{filepath.Clean(path), real} {
		for d := filepath.Dir(p); !seen[d]; d = filepath.Dir(d) {
			seen[d] = true
			fi, err := os.Stat(d)
			if err != nil {
				return fmt.Errorf("config folder: %w", err)
			}
			if uid := fileowner.Of(fi); uid != me && uid != 0 {
				return &ModeError{Path: d,
					Problem: fmt.Sprintf("%s, a folder above the config folder, is owned by uid %d, neither you (uid %d) nor root: its owner could replace config.toml and choose the commands krad-ade runs as you", d, uid, me),
					Fix:     "keep the config folder in folders that only you or root own (krad-ade --config-dir DIR)"}
			}
			if fi.Mode()&fs.ModeSticky != 0 {
				continue // others may add names here, but not take or replace ours
			}
			if w := writers(fi.Mode()); w != "" {
				return &ModeError{Path: d,
					Problem: fmt.Sprintf("%s, a folder above the config folder, is writable by %s (mode %04o): they could replace config.toml and choose the commands krad-ade runs as you", d, w, fi.Mode().Perm()),
					Fix:     "chmod go-w " + shell.Word(d)}
			}
			aces, err := readACL(d)
			if err != nil {
				return fmt.Errorf("config folder: %w", err)
			}
			if fileacl.Writes(aces) != 0 {
				return &ModeError{Path: d,
					Problem: fmt.Sprintf("%s, a folder above the config folder, has an ACL that lets others write to it (ls -led shows it): they could replace config.toml and choose the commands krad-ade runs as you", d),
					Fix:     "chmod -N " + shell.Word(d) + " (removes its ACL)"}
			}
		}
	}
	return nil
}

// writers says who besides the owner may write a file of mode m: "" for no one.
func writers(m fs.FileMode) string {
	switch m.Perm() & 0o022 {
	case 0o022:
		return "its group and every user"
	case 0o020:
		return "its group"
	case 0o002:
		return "every user"
	}
	return ""
}
