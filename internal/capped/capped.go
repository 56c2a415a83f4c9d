// Package capped keeps a bounded part of what another program writes — a command's stderr, a
// host's output — for an error message: [First] keeps the start, [Last] the end. Writes never
// fail, so that a program that says too much is not stopped for it; [Buffer.Cut] says whether
// anything was dropped.
//
// What the buffer holds is the other program's words: escape it (package termsafe) before it
// reaches a terminal.
package capped

import "sync"

// Buffer keeps at most a fixed number of bytes of what is written to it: the first ones or the
// last ones. It is safe for one writer and other readers at once.
type Buffer struct {
	mu    sync.Mutex
	b     []byte
	max   int
	last  bool
	cut   bool
	onCut func()
}

// First is a Buffer that keeps the first max bytes written and drops the rest.
func First(max int) *Buffer { return &Buffer{max: max} }

// Last is a Buffer that keeps the last max bytes written.
func Last(max int) *Buffer { return &Buffer{max: max, last: true} }

// OnCut makes b call f, in a goroutine of its own, the first time a write goes past the cap: to
// stop a program whose output has no end. It returns b.
func (b *Buffer) OnCut(f func()) *Buffer {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.onCut = f
	return b
}

// Write keeps what the cap allows of p, and never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if len(b.b)+len(p) > b.max {
		if !b.cut && b.onCut != nil {
			// Not under the lock, and not waited for: f may wait for this writer (closing the
			// session that feeds it).
			go b.onCut()
		}
		b.cut = true
	}
	if !b.last {
		b.b = append(b.b, p[:min(len(p), max(0, b.max-len(b.b)))]...)
		return n, nil
	}
	b.b = append(b.b, p[max(0, len(p)-b.max):]...)
	if over := len(b.b) - b.max; over > 0 {
		b.b = b.b[:copy(b.b, b.b[over:])]
	}
	return n, nil
}

// Bytes is a copy of what b holds.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.b...)
}

// String is what b holds.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.b)
}

// Cut says whether b dropped anything written to it.
func (b *Buffer) Cut() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cut
}
