package filestate

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestLook: a look reads the file only when its metadata changed, or changed so recently that a
// rewrite within the same tick of the file system's clock could hide behind it; it reports a
// change only when what it read differs. A rewrite in place that keeps the size and the
// modification time is found by the change time; a failed read is tried again at every look.
func TestLook(t *testing.T) {
	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	racyWindow = 100 * time.Millisecond
	settle := func() { time.Sleep(2 * racyWindow) } // the file's times are past the window

	path := filepath.Join(t.TempDir(), "known_hosts")
	write := func(data string) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	reads := 0
	var fail error
	read := func(p string) ([]byte, error) {
		reads++
		if fail != nil {
			return nil, fail
		}
		return readRegular(p)
	}
	f := &File{Path: path}
	look := func(what string, wantChanged bool, wantReads int) {
		t.Helper()
		reads = 0
		changed, _, _ := f.Look(read)
		if changed != wantChanged || reads != wantReads {
			t.Errorf("%s: changed %v after %d reads, want %v after %d", what, changed, reads, wantChanged, wantReads)
		}
	}

	look("the first look, at a missing file", true, 1)
	write("host-a ssh-ed25519 AAAA\n")
	look("created", true, 1)
	look("untouched, but written within the window", false, 1)
	settle()
	look("untouched, the window past since the last look's read", false, 1)
	look("untouched", false, 0)
	look("untouched again", false, 0)
	write("host-a ssh-ed25519 AAAA\n")
	settle()
	look("rewritten with the same bytes", false, 1)

	// In place, the same size, and the modification time put back: the change time differs.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("host-b ssh-ed25519 AAAA\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, time.Time{}, fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	settle()
	look("rewritten in place, same size and mtime", true, 1)
	look("untouched since", false, 0)

	fail = errors.New("permission denied")
	f.Forget()
	look("unreadable", true, 1)
	look("unreadable, untouched", false, 1)
	fail = nil
	look("readable again, untouched", true, 1)
	look("readable, untouched", false, 0)

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	look("removed", true, 1)
	look("still missing", false, 1)

	// A FIFO is never opened: a look that blocked would hold the poll.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	ff := &File{Path: fifo}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ff.Look(nil)
		ff.Look(nil)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a look at a FIFO blocked")
	}
}

// ChangedWithin tells a file just written from one left alone, and does not take a file whose
// time is far ahead of the clock (set by hand, or by a file server's clock) for one being
// written.
func TestChangedWithin(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the times of a file are read on Linux only")
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("a = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &File{Path: path}
	if f.ChangedWithin(time.Hour) {
		t.Error("a file never looked at: changed within the hour, want not")
	}
	f.Look(nil)
	if !f.ChangedWithin(time.Hour) {
		t.Error("just written: not changed within the hour, want changed")
	}
	time.Sleep(50 * time.Millisecond)
	f.Look(nil)
	if f.ChangedWithin(10 * time.Millisecond) {
		t.Error("left alone for 50 ms: changed within 10 ms of the look, want not")
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, future, future); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	f.Look(nil)
	if f.ChangedWithin(10 * time.Millisecond) {
		t.Error("modified an hour ahead of the clock: changed within 10 ms of the look, want not")
	}
}
