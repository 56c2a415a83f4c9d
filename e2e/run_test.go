//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// TestLockFileOutlivesAnotherRunsCheck: a run's lock must stay on the file its path names while
// other runs check it and remove the lock files of runs they find dead, as parallel test packages
// do when they start. A run that locked a file removed from under it looked dead to the next
// check, which then removed the run's containers. Here one run takes its lock again and again
// while two others check it as runIsAlive does: the path always names the file the run holds, and
// no check takes the lock while the run holds it.
func TestLockFileOutlivesAnotherRunsCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs", "0123456789ab.lock")
	var (
		stop    = make(chan struct{})
		holding sync.Mutex // held by the run while it holds its lock
		wg      sync.WaitGroup
	)
	check := func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			f, err := lockFile(path, false)
			if err != nil {
				continue // alive (or the path went while it opened it: checked again)
			}
			if holding.TryLock() {
				holding.Unlock()
			} else {
				t.Error("a check took the lock while the run held it")
			}
			os.Remove(f.Name())
			f.Close()
		}
	}
	wg.Add(2)
	go check()
	go check()
	for range 2000 {
		f, err := lockFile(path, true)
		if err != nil {
			t.Fatal(err)
		}
		holding.Lock()
		held, _ := f.Stat()
		if named, err := os.Stat(path); err != nil || !os.SameFile(held, named) {
			t.Errorf("the run holds a lock on a file its path no longer names (%v)", err)
		}
		// What another run's check sees of it, as runIsAlive asks.
		if g, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
			if syscall.Flock(int(g.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
				t.Error("the run's lock file can be locked by another run while it holds it")
			}
			g.Close()
		}
		holding.Unlock()
		os.Remove(f.Name())
		f.Close()
		if t.Failed() {
			break
		}
	}
	close(stop)
	wg.Wait()
}
