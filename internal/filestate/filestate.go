// Package filestate tells whether a file changed since it was last looked at, cheaply enough to
// poll: the config watcher polls config.toml, and a failed SSH connection polls the ssh_config
// and known_hosts files it read, every half second.
//
// A look first compares the file's metadata with the last look's (size, modification and change
// times, inode, device, mode): when they are the same, the file is taken as unchanged without
// opening it. When any differs, the file is read and compared by content (its SHA-256), so that
// a touch or a rewrite with the same bytes is not a change. A file system's clock has ticks (a
// few milliseconds, or seconds on some), and a rewrite in place within the tick of the last look
// would keep every time and the size: so, as git does for racily clean files, metadata that
// changed within racyWindow of a look is not trusted, and the next look reads the file again. A
// file that could not be read last time is read again at every look too: the error may have gone
// (a mode fixed elsewhere, say).
package filestate

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

// MaxRead caps what a look reads of a file with the plain reader; the rest is not compared.
const MaxRead = 16 << 20

// racyWindow is how old a file's times must be, at a look, for that look's metadata to be
// trusted at the next: past the coarsest clock of the file systems people keep these files on.
// Tests shorten it.
var racyWindow = 2 * time.Second

// File is one file being watched. Its zero value, with Path set, has not been looked at.
type File struct {
	Path string

	looked  bool
	at      time.Time // when the last look was
	stamp   stamp     // the metadata at the last look, taken before the read
	seen    string    // what the last read came to: "missing", "error …" or "content <sha256>"
	trusted bool      // the last read succeeded, and stamp was not racy: unchanged, it says unchanged
}

// Look looks at the file now and reports whether it is not as it was at the last look (the
// first look reports a change). read reads the file when its metadata changed; nil reads a
// regular file (never a FIFO or a device, which are "not a regular file") up to MaxRead. data
// and err are what read returned, when it was called: a caller that needs the content gets it
// from the same read that was compared.
func (f *File) Look(read func(path string) ([]byte, error)) (changed bool, data []byte, err error) {
	now := time.Now()
	st := stampOf(f.Path)
	if f.looked && f.trusted && st.known && st == f.stamp {
		return false, nil, nil
	}
	if read == nil {
		read = readRegular
	}
	data, err = read(f.Path)
	seen := describe(data, err)
	changed = !f.looked || seen != f.seen
	f.looked, f.at, f.stamp, f.seen = true, now, st, seen
	f.trusted = err == nil && st.known && !st.changedSince(now.Add(-racyWindow))
	return changed, data, err
}

// ChangedWithin says whether the file, at the last look, had been modified (or its metadata
// changed) within d of that look: a file that may still be being written, as an editor or a
// shell's `>` writes one in place, truncated first. A time after the look's by more than d (a
// clock set back, a file server's own clock) is not within: such a file would seem to be written
// for ever. Where the times are not known (elsewhere than on Linux, or a file that could not be
// looked at), false.
func (f *File) ChangedWithin(d time.Duration) bool {
	return f.looked && f.stamp.changedNear(f.at, d)
}

// Forget makes the next Look read the file and report it as changed, as the first one does.
func (f *File) Forget() { f.looked = false }

// describe is what a read came to.
func describe(data []byte, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "missing"
	case err != nil:
		return "error " + err.Error()
	}
	return fmt.Sprintf("content %x", sha256.Sum256(data))
}

// readRegular reads the file at path, up to MaxRead, when it is a regular file. It opens it
// without blocking, so that a FIFO swapped in between the look and the open cannot hold it.
func readRegular(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file: %s", fi.Mode().Type())
	}
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(io.LimitReader(fh, MaxRead))
}
