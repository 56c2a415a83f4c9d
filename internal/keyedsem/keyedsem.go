// Package keyedsem holds a counting semaphore per key (a group's name, a host's address), each
// with the same number of slots, made on a key's first use and dropped with its last user, so that
// the set does not grow with every key it has seen. Waiters of a key take its slots in the order
// they came, and a waiter whose context ends leaves the queue with nothing held.
package keyedsem

import (
	"context"
	"errors"
	"sync"
)

// Set is a semaphore per key, each of Slots slots. The zero Set is not usable: make one with
// [New].
type Set struct {
	slots int
	mu    sync.Mutex
	m     map[string]*sem
}

type sem struct {
	slots chan struct{}
	users int // those holding or waiting for a slot; the entry goes with the last
}

// New returns a Set whose keys have slots slots each (1: a lock per key). slots < 1 panics.
func New(slots int) *Set {
	if slots < 1 {
		panic("keyedsem: a semaphore needs at least one slot")
	}
	return &Set{slots: slots, m: map[string]*sem{}}
}

// Acquire takes one of key's slots, waiting while they are all taken, or until ctx ends (then it
// returns ctx's error and holds nothing). release gives the slot back; calling it again does
// nothing.
func (s *Set) Acquire(ctx context.Context, key string) (release func(), err error) {
	return s.take(ctx, key, true)
}

// TryAcquire takes one of key's slots if one is free now; ok is false, and nothing is held,
// when they are all taken.
func (s *Set) TryAcquire(key string) (release func(), ok bool) {
	release, err := s.take(context.Background(), key, false)
	return release, err == nil
}

// Keys is how many keys have a slot held or waited for now.
func (s *Set) Keys() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// errTaken is take's answer, without wait, when every slot is taken.
var errTaken = errors.New("every slot is taken")

func (s *Set) take(ctx context.Context, key string, wait bool) (func(), error) {
	s.mu.Lock()
	e := s.m[key]
	if e == nil {
		e = &sem{slots: make(chan struct{}, s.slots)}
		s.m[key] = e
	}
	e.users++
	s.mu.Unlock()
	leave := func() {
		s.mu.Lock()
		if e.users--; e.users == 0 {
			delete(s.m, key)
		}
		s.mu.Unlock()
	}
	select {
	case e.slots <- struct{}{}:
	default:
		if !wait {
			leave()
			return nil, errTaken
		}
		select {
		case e.slots <- struct{}{}:
		case <-ctx.Done():
			leave()
			return nil, ctx.Err()
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-e.slots
			leave()
		})
	}, nil
}
