//go:build unix

package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// lockAdmin takes the repository's lock on choosing port blocks (a POSIX flock on a file in its
// git folder, dropped by the kernel however the process ends), so that groups made at the same
// time, by this process or another, never get the same block; waiting, while another holds it,
// until ctx ends. The func releases it. The Creates of this process (a variant set's, say) wait
// their turn on a channel first, so that only another process's hold is waited out by looking
// again (see flockOne).
func (r *Repo) lockAdmin(ctx context.Context) (func(), error) {
	done, err := takeTurn(ctx, adminTurn(r.CommonDir))
	if err != nil {
		return nil, err
	}
	f, err := r.lockFile("krad-worktrees.lock")
	if err != nil {
		done()
		return nil, err
	}
	if _, err := flockOne(ctx, []*os.File{f}); err != nil {
		f.Close()
		done()
		return nil, err
	}
	return func() { f.Close(); done() }, nil
}

// takeTurn waits for one of turns (a channel whose room is how many may go at once), until ctx
// ends; the func gives it back.
func takeTurn(ctx context.Context, turns chan struct{}) (func(), error) {
	select {
	case turns <- struct{}{}:
		return func() { <-turns }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// adminTurns holds, for each repository's git folder, the turn of this process's lockAdmin: a
// channel of one.
var adminTurns sync.Map // CommonDir → chan struct{}

func adminTurn(commonDir string) chan struct{} {
	ch, _ := adminTurns.LoadOrStore(commonDir, make(chan struct{}, 1))
	return ch.(chan struct{})
}

// flockOne takes an exclusive flock on one of files, waiting while every one is held, until ctx
// ends: it looks again after 10 ms, doubling to 200 ms (flock cannot wait on several files at
// once, nor be cancelled). It returns the index of the file it locked.
func flockOne(ctx context.Context, files []*os.File) (int, error) {
	wait := 10 * time.Millisecond
	for {
		for i, f := range files {
			err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
			if err == nil {
				return i, nil
			}
			if !errors.Is(err, unix.EWOULDBLOCK) {
				return 0, err
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// lockFile opens (making it, owner-only, if need be) the lock file name in the repository's git
// folder, shared by its worktrees.
func (r *Repo) lockFile(name string) (*os.File, error) {
	return os.OpenFile(filepath.Join(r.CommonDir, name), os.O_RDWR|os.O_CREATE, 0o600)
}

// checkoutSlotFile is the name of checkout slot i's lock file.
func checkoutSlotFile(i int) string { return "krad-checkout." + strconv.Itoa(i) + ".lock" }

// checkoutSlots is how many checkouts of one repository run at once: as many as the machine
// has cores, and at least two. Eight checkouts of a tree of ten thousand files at once on two
// cores took 2.3 times as long as the same eight one after another (the kernel's page cache and
// the disk's queue thrashed between them); a few at a time keep the cores busy without that.
var checkoutSlots = max(2, runtime.NumCPU())

// checkoutSlot takes one of the repository's checkout slots (flocks on files in its git folder,
// shared by every process that makes groups there: the app, and each request's krad on a host),
// waiting while all are taken, until ctx ends. The func gives it back. This process's checkouts
// (a variant set's) wait for one another on a channel of checkoutSlots turns, handed on the
// moment one ends; only slots that another process holds are waited out by looking again
// (flockOne: a checkout takes seconds).
func (r *Repo) checkoutSlot(ctx context.Context) (func(), error) {
	done, err := takeTurn(ctx, checkoutTurn(r.CommonDir))
	if err != nil {
		return nil, err
	}
	release, err := r.flockSlot(ctx)
	if err != nil {
		done()
		return nil, err
	}
	return func() { release(); done() }, nil
}

// checkoutTurns holds, for each repository's git folder, this process's turns at its checkout
// slots: a channel of checkoutSlots.
var checkoutTurns sync.Map // CommonDir → chan struct{}

func checkoutTurn(commonDir string) chan struct{} {
	ch, _ := checkoutTurns.LoadOrStore(commonDir, make(chan struct{}, checkoutSlots))
	return ch.(chan struct{})
}

// flockSlot takes the flock of a free checkout slot, waiting until ctx ends.
func (r *Repo) flockSlot(ctx context.Context) (func(), error) {
	files := make([]*os.File, checkoutSlots)
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}()
	for i := range files {
		f, err := r.lockFile(checkoutSlotFile(i))
		if err != nil {
			return nil, err
		}
		files[i] = f
	}
	i, err := flockOne(ctx, files)
	if err != nil {
		return nil, err
	}
	f := files[i]
	files[i] = nil // kept open, and so locked, until the func
	return func() { f.Close() }, nil
}
