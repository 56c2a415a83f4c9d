//go:build linux || darwin || freebsd

package worktree

import "golang.org/x/sys/unix"

// diskRoom is the room left, for this user, on the disk that holds dir, and its block size.
func diskRoom(dir string) (free, block uint64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Bsize), true
}
