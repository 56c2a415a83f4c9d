// Package lockedwriter lets several goroutines share one io.Writer, a Write at a time: a child
// process's output and a program's own progress lines on one stderr, say. Each Write reaches the
// writer whole, never interleaved with another.
package lockedwriter

import (
	"io"
	"sync"
)

// Writer serializes the writes to one io.Writer.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// New is a Writer to w.
func New(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p to the writer, after any Write under way has returned.
func (l *Writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
