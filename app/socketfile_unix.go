//go:build unix

package app

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkSocketDir refuses a tmux socket folder that tmux would refuse.
func checkSocketDir(dir string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("tmux's socket folder %s is not a folder", dir)
	case ok && int(st.Uid) != os.Getuid():
		return fmt.Errorf("tmux's socket folder %s is owned by uid %d, not by you (uid %d)", dir, st.Uid, os.Getuid())
	case fi.Mode().Perm()&0o007 != 0:
		return fmt.Errorf("tmux's socket folder %s is open to every user (mode %04o)", dir, fi.Mode().Perm())
	}
	return nil
}
