//go:build linux

package listenowner

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// WriteSocketsOf writes, one a line as `ls -l /proc/PID/fd` ends them ("FD -> socket:[INODE]"),
// the sockets that process pid holds, and returns how many. A process whose descriptors this one
// may not read (another user's, or one that made itself non-dumpable, as sshd does for users
// other than root) has none to write: that is no error, as it is none for ls.
//
// It is how the app's check of its forward on an SSH host learns which listening sockets are
// its sshd session's, through the static krad there (krad-ade-agents listeners --of).
func WriteSocketsOf(w io.Writer, pid int) (int, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		if os.IsPermission(err) || os.IsNotExist(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("read %s: %w", dir, err)
	}
	var b strings.Builder
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(dir + "/" + fd.Name())
		if err != nil || !strings.HasPrefix(target, "socket:[") {
			continue // closed meanwhile, or no socket
		}
		fmt.Fprintf(&b, "%s -> %s\n", fd.Name(), target)
		n++
	}
	_, err = io.WriteString(w, b.String())
	return n, err
}
