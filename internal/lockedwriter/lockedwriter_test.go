package lockedwriter

import (
	"strings"
	"sync"
	"testing"
)

// slowWriter appends what it is given a byte at a time, so that two writes at once would mix.
type slowWriter struct{ b []byte }

func (s *slowWriter) Write(p []byte) (int, error) {
	for _, c := range p {
		s.b = append(s.b, c)
	}
	return len(p), nil
}

// TestWritesWhole: writes from many goroutines at once reach the writer each whole.
func TestWritesWhole(t *testing.T) {
	var sw slowWriter
	w := New(&sw)
	var wg sync.WaitGroup
	for _, line := range []string{"aaaaaaaa\n", "bbbbbbbb\n", "cccccccc\n", "dddddddd\n"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				w.Write([]byte(line))
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(string(sw.b), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	for _, l := range lines {
		if len(l) != 8 || strings.Count(l, l[:1]) != 8 {
			t.Fatalf("a line mixes two writes: %q", l)
		}
	}
}
