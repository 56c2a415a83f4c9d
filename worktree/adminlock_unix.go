//go:build unix

package worktree

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockAdmin takes the repository's lock on choosing port blocks (a POSIX flock on a file in its
// git folder, dropped by the kernel however the process ends), so that groups made at the same
// time, by this process or another, never get the same block. The func releases it.
func (r *Repo) lockAdmin() (func(), error) {
	f, err := os.OpenFile(filepath.Join(r.CommonDir, "krad-worktrees.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
