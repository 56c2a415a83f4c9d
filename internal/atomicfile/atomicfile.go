// Package atomicfile writes files that matter whole or not at all, as tailscale's atomicfile
// does: a reader of the file sees the old contents or the new, never a part, and a failure
// leaves the old file and no temporary one.
//
// # Security model
//
// The temporary file is created with O_EXCL and mode 0600, in the target's own folder, so no one
// else can open it before it holds the data or swap it for a link; its mode is set to the
// caller's before the first byte is written. A symbolic link, or anything but a regular file, at
// the target is refused and left as it is: the rename would replace the link rather than follow
// it, but a link where a file of ours should be means someone else put it there. The folder is
// the caller's to check: whoever can write it can remove or replace the file.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// The refusals of [WriteFile], wrapped in an *fs.PathError that names the target.
var (
	// ErrSymlink: the target is a symbolic link.
	ErrSymlink = errors.New("is a symbolic link: refused")
	// ErrNotRegular: the target is something other than a regular file (a folder, a FIFO, a
	// device).
	ErrNotRegular = errors.New("is not a regular file: refused")
)

// WriteFile writes data to path with mode perm, through a temporary file in path's folder that it
// syncs, closes and renames over path, then syncs the folder. Its errors are *fs.PathError with Op
// "write" and Path path.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, putAndSync, true)
}

// WriteFileUnsynced is WriteFile without the syncs: whole or not at all for every reader while
// the system runs, but after a crash it may be missing, or empty, as the files beside it may be.
// It is for a file that lives among files their own program does not sync (git's admin data of
// a worktree), where a sync would buy nothing and cost much: on ext4 (data=ordered) a sync waits
// for every file written before it to reach the disk, a checkout of thousands of them included.
func WriteFileUnsynced(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, put, false)
}

func put(fh *os.File, data []byte) error {
	_, err := fh.Write(data)
	return err
}

// putAndSync writes data to the temporary file and syncs it; tests replace it to make the write
// fail halfway.
func putAndSync(fh *os.File, data []byte) error {
	if _, err := fh.Write(data); err != nil {
		return err
	}
	return fh.Sync()
}

func write(path string, data []byte, perm fs.FileMode, put func(*os.File, []byte) error, sync bool) error {
	if err := writeVia(path, data, perm, put, sync); err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

func writeVia(path string, data []byte, perm fs.FileMode, put func(*os.File, []byte) error, sync bool) (err error) {
	if fi, err := os.Lstat(path); err == nil {
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return ErrSymlink
		case !fi.Mode().IsRegular():
			return ErrNotRegular
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(path)
	// CreateTemp opens with O_EXCL and mode 0600, so the file is private before it holds a byte.
	fh, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := fh.Name()
	defer func() {
		if err != nil {
			fh.Close()
			os.Remove(tmp)
		}
	}()
	// The mode whatever the umask: CreateTemp's can only have lost bits to it.
	if err := fh.Chmod(perm); err != nil && runtime.GOOS != "windows" {
		return err
	}
	if err := put(fh, data); err != nil {
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if sync {
		syncDir(dir)
	}
	return nil
}

// syncDir makes the rename durable where the system allows it. A failure is not reported: the
// file is in place and readable either way, and Windows cannot sync a folder.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	d.Close()
}
