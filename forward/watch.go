package forward

import (
	"time"

	"github.com/krad-ade/krad/forward/sshconfig"
	"github.com/krad-ade/krad/internal/filestate"
)

// filePoll is how often a failed connection looks at the files its last attempt read.
const filePoll = 500 * time.Millisecond

// watched is what files were like when an attempt read them: the ssh_config files and the
// known_hosts files of every hop. A failed connection polls them, since the likely fix of what
// failed (a host key, a setting) is an edit of one of them. A poll reads a file only when its
// metadata changed (package filestate), and compares it by content. (Files an ssh_config
// Includes are not among them: an edit there needs [Conn.Retry].)
type watched []*filestate.File

// add records how each path is now; a path already there is left as it was first seen. Only a
// regular file is read (a FIFO would block, and UserKnownHostsFile /dev/null is common), up to
// filestate.MaxRead.
func (w *watched) add(paths ...string) {
	for _, p := range paths {
		if p == "" || w.has(p) {
			continue
		}
		f := &filestate.File{Path: p}
		f.Look(nil)
		*w = append(*w, f)
	}
}

func (w watched) has(path string) bool {
	for _, f := range w {
		if f.Path == path {
			return true
		}
	}
	return false
}

// changed returns the first file that is not as it was at the last look, if any.
func (w watched) changed() (string, bool) {
	for _, f := range w {
		if changed, _, _ := f.Look(nil); changed {
			return f.Path, true
		}
	}
	return "", false
}

// knownHostsFiles are the known_hosts files of h and of every hop on the way.
func knownHostsFiles(h *sshconfig.Host) []string {
	var out []string
	for _, x := range append([]*sshconfig.Host{h}, h.Jump...) {
		out = append(out, x.KnownHostsFiles...)
		out = append(out, x.GlobalKnownHostsFiles...)
	}
	return out
}
