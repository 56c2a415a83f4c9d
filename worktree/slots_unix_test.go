//go:build unix

package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// holdCheckoutSlots takes every checkout slot of r as another process making groups would, and
// gives back the funcs that release one of them, and all.
func holdCheckoutSlots(t *testing.T, r *Repo) (releaseOne, releaseAll func()) {
	t.Helper()
	var held []*os.File
	for i := range checkoutSlots {
		f, err := r.lockFile(checkoutSlotFile(i))
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Fatalf("slot %d: %v", i, err)
		}
		held = append(held, f)
	}
	releaseAll = func() {
		for _, f := range held {
			f.Close()
		}
		held = nil
	}
	t.Cleanup(releaseAll)
	return func() { held[0].Close(); held = held[1:] }, releaseAll
}

// TestCreateWaitsForACheckoutSlot: with every checkout slot of the repository taken (by the
// checkouts of another process's groups), Create makes the group's admin folder and waits
// before its checkout; a slot given back, it checks out and the group is whole. A client that
// leaves while it waits leaves nothing behind.
func TestCreateWaitsForACheckoutSlot(t *testing.T) {
	dir := newRepo(t)
	r := open(t, dir)
	root := t.TempDir()
	before := look(t, r, root)

	releaseOne, releaseAll := holdCheckoutSlots(t, r)
	steps := make(chan string, 8)
	createStep = func(s string) { steps <- s }
	defer func() { createStep = nil }()
	type created struct {
		g   Group
		err error
	}
	done := make(chan created, 1)
	go func() {
		g, err := r.Create(context.Background(), CreateOptions{Name: "waits", Root: root})
		done <- created{g, err}
	}()
	for s := ""; s != "worktree"; {
		select {
		case s = <-steps:
		case c := <-done:
			t.Fatalf("Create = %+v, %v before its admin folder was made", c.g, c.err)
		}
	}
	select {
	case s := <-steps:
		t.Fatalf("step %q with every checkout slot taken; want Create waiting before its checkout", s)
	case c := <-done:
		t.Fatalf("Create = %+v, %v with every checkout slot taken; want it waiting", c.g, c.err)
	case <-time.After(500 * time.Millisecond):
	}
	releaseOne()
	c := <-done
	if c.err != nil {
		t.Fatalf("Create after a slot came free: %v", c.err)
	}
	if _, err := os.Stat(filepath.Join(c.g.Dir, "README")); err != nil {
		t.Errorf("the group's checkout after a slot came free: %v", err)
	}
	if _, err := r.Retire(context.Background(), "waits"); err != nil {
		t.Fatal(err)
	}
	releaseAll()

	// A client that leaves while Create waits for a slot: rolled back.
	holdCheckoutSlots(t, r)
	ctx, cancel := context.WithCancel(context.Background())
	createStep = func(s string) {
		if s == "worktree" {
			time.AfterFunc(100*time.Millisecond, cancel)
		}
	}
	_, err := r.Create(ctx, CreateOptions{Name: "leaves", Root: root})
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Create whose client left while it waited for a checkout slot = %v, want context.Canceled", err)
	}
	noLeftovers(t, "left while waiting for a checkout slot", before, look(t, r, root))
}

// TestCreateWaitsForTheAdminLockUntilItsContextEnds: with the repository's admin lock held (by
// another process making or retiring a group there, stuck), a Create waits for it only as long
// as its context lasts, then fails with the context's error and leaves nothing behind; the lock
// given back, a Create goes through.
func TestCreateWaitsForTheAdminLockUntilItsContextEnds(t *testing.T) {
	dir := newRepo(t)
	r := open(t, dir)
	root := t.TempDir()
	before := look(t, r, root)
	held, err := r.lockFile("krad-worktrees.lock")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := unix.Flock(int(held.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.Create(ctx, CreateOptions{Name: "waits", Root: root})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Create with the admin lock held past its deadline = %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(10 * time.Second):
		held.Close() // so that the Create ends, and the test with it
		<-done
		t.Fatal("Create waited for the admin lock 10 s past its context's end")
	}
	noLeftovers(t, "waited for the admin lock past its deadline", before, look(t, r, root))

	held.Close()
	if _, err := r.Create(context.Background(), CreateOptions{Name: "after", Root: root}); err != nil {
		t.Fatalf("Create once the admin lock was given back: %v", err)
	}
}
