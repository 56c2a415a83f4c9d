//go:build !(linux || darwin || freebsd)

package worktree

// diskRoom cannot be told here.
func diskRoom(dir string) (free, block uint64, ok bool) { return 0, 0, false }
