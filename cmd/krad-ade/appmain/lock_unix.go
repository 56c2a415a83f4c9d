//go:build unix

package appmain

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// lockFile opens path (creating it owner-only, refusing a symlink) and takes a write lock on the
// whole file, which it keeps until the file is closed. When another process holds the lock it
// returns a *heldError with that process's pid. It writes its own pid into the file, for people.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symlink: remove it", path)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file: remove it", path)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		if !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EACCES) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		// Held: ask the kernel by whom. It may have been released in between, in which case
		// the pid is unknown; the second app refuses all the same, and a retry starts.
		held := &heldError{path: path}
		lk = syscall.Flock_t{Type: syscall.F_WRLCK}
		if syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk) == nil && lk.Type != syscall.F_UNLCK {
			held.pid = int(lk.Pid)
		}
		f.Close()
		return nil, held
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
