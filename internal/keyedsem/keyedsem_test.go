package keyedsem

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestSlots: a key's slots are shared by Acquire and TryAcquire, other keys are apart, a second
// release gives back nothing more, and the key's entry goes with its last user.
func TestSlots(t *testing.T) {
	s := New(2)
	a1, err := s.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	a2, ok := s.TryAcquire("a")
	if !ok {
		t.Fatal("the second of two slots was refused")
	}
	if _, ok := s.TryAcquire("a"); ok {
		t.Fatal("a third slot of two was given")
	}
	b, ok := s.TryAcquire("b")
	if !ok {
		t.Fatal("another key's slot was refused")
	}
	a1()
	a1() // nothing more
	a3, ok := s.TryAcquire("a")
	if !ok {
		t.Fatal("a freed slot was refused")
	}
	if _, ok := s.TryAcquire("a"); ok {
		t.Fatal("a second release gave back a slot")
	}
	if got := s.Keys(); got != 2 {
		t.Errorf("%d keys held, want 2", got)
	}
	a2()
	a3()
	b()
	if got := s.Keys(); got != 0 {
		t.Errorf("%d keys left after every release, want 0", got)
	}
}

// TestWaitEndsWithItsContext: a waiter whose context ends gets its error, holds nothing, and
// does not keep the key's entry.
func TestWaitEndsWithItsContext(t *testing.T) {
	s := New(1)
	held, err := s.Acquire(context.Background(), "g")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := s.Acquire(ctx, "g")
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiter got %v, want context.Canceled", err)
	}
	held()
	if got := s.Keys(); got != 0 {
		t.Errorf("%d keys left, want 0", got)
	}
	again, ok := s.TryAcquire("g")
	if !ok {
		t.Fatal("the lock was not free after its holder released it and its waiter left")
	}
	again()
}

// TestOneAtATime: with one slot, no two holders of a key ever overlap, and every waiter gets its
// turn.
func TestOneAtATime(t *testing.T) {
	s := New(1)
	var (
		mu       sync.Mutex
		in, most int
		wg       sync.WaitGroup
	)
	for range 20 {
		wg.Go(func() {
			release, err := s.Acquire(context.Background(), "k")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			in++
			most = max(most, in)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			in--
			mu.Unlock()
			release()
		})
	}
	wg.Wait()
	if most != 1 {
		t.Errorf("%d holders at once, want 1", most)
	}
	if got := s.Keys(); got != 0 {
		t.Errorf("%d keys left, want 0", got)
	}
}
