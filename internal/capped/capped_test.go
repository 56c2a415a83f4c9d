package capped

import (
	"strings"
	"testing"
	"time"
)

func TestBuffer(t *testing.T) {
	for _, tt := range []struct {
		name    string
		buf     *Buffer
		writes  []string
		want    string
		wantCut bool
	}{
		{"first: under the cap", First(8), []string{"abc", "de"}, "abcde", false},
		{"first: at the cap", First(5), []string{"abc", "de"}, "abcde", false},
		{"first: past the cap", First(4), []string{"abc", "def", "ghi"}, "abcd", true},
		{"first: one long write", First(3), []string{"abcdef"}, "abc", true},
		{"last: under the cap", Last(8), []string{"abc", "de"}, "abcde", false},
		{"last: at the cap", Last(5), []string{"abc", "de"}, "abcde", false},
		{"last: past the cap", Last(4), []string{"abc", "def", "ghi"}, "fghi", true},
		{"last: one long write", Last(3), []string{"abcdef"}, "def", true},
		{"last: a long write after a short one", Last(4), []string{"ab", "cdefgh"}, "efgh", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, w := range tt.writes {
				if n, err := tt.buf.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", w, n, err, len(w))
				}
			}
			if got := tt.buf.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if got := string(tt.buf.Bytes()); got != tt.want {
				t.Errorf("Bytes: got %q, want %q", got, tt.want)
			}
			if got := tt.buf.Cut(); got != tt.wantCut {
				t.Errorf("Cut: got %v, want %v", got, tt.wantCut)
			}
		})
	}
}

func TestOnCutOnce(t *testing.T) {
	calls := make(chan struct{}, 10)
	b := First(4).OnCut(func() { calls <- struct{}{} })
	b.Write([]byte("abcd"))
	select {
	case <-calls:
		t.Fatal("OnCut called at the cap, before anything was dropped")
	case <-time.After(50 * time.Millisecond):
	}
	for range 3 {
		b.Write([]byte(strings.Repeat("x", 10)))
	}
	<-calls
	select {
	case <-calls:
		t.Fatal("OnCut called twice")
	case <-time.After(50 * time.Millisecond):
	}
}
