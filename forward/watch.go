package forward

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// filePoll is how often a failed connection looks at the files its last attempt read.
const filePoll = 500 * time.Millisecond

// maxWatched caps what is read of one watched file; past it, the rest is not compared.
const maxWatched = 16 << 20

// watched is what files were like when an attempt read them: the ssh_config files and the
// known_hosts files of every hop. A failed connection polls them, since the likely fix of what
// failed (a host key, a setting) is an edit of one of them. (Files an ssh_config Includes are
// not among them: an edit there needs [Conn.Retry].)
type watched []watchedFile

type watchedFile struct {
	path string
	seen string // "missing", "error …" or "content <sha256>"
}

// add records how each path is now; a path already there is left as it was first seen.
func (w *watched) add(paths ...string) {
	for _, p := range paths {
		if p == "" || w.has(p) {
			continue
		}
		*w = append(*w, watchedFile{path: p, seen: look(p)})
	}
}

func (w watched) has(path string) bool {
	for _, f := range w {
		if f.path == path {
			return true
		}
	}
	return false
}

// changed returns the first file that is not as it was seen, if any.
func (w watched) changed() (string, bool) {
	for _, f := range w {
		if look(f.path) != f.seen {
			return f.path, true
		}
	}
	return "", false
}

// look says what the file at path is like: by content, so that a rewrite within one tick of the
// file system's clock is not missed. Only a regular file is opened (a FIFO would block, and
// UserKnownHostsFile /dev/null is common).
func look(path string) string {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "missing"
	}
	if err != nil {
		return "error " + err.Error()
	}
	if !fi.Mode().IsRegular() {
		return "not a regular file: " + fi.Mode().Type().String()
	}
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "error " + err.Error()
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(fh, maxWatched)); err != nil {
		return "error " + err.Error()
	}
	return fmt.Sprintf("content %x", h.Sum(nil))
}

// knownHostsFiles are the known_hosts files of h and of every hop on the way.
func (h *Host) knownHostsFiles() []string {
	var out []string
	for _, x := range append([]*Host{h}, h.Jump...) {
		out = append(out, x.KnownHostsFiles...)
		out = append(out, x.GlobalKnownHostsFiles...)
	}
	return out
}
