package worktree

import (
	"bytes"
	"strings"
	"testing"
)

// The parsers of git's output: whatever git prints, they return an error or records, never
// panic.

func FuzzParseRawNumstat(f *testing.F) {
	for _, s := range []string{
		":100644 100644 bdc955b 25cb955 M\x00bin\x00:100644 100644 422c2b7 de98044 R066\x00f\x00g\x00-\t-\tbin\x001\t0\t\x00f\x00g\x00",
		":100644 100644 a b M\x00x\x001\t2\tx\x00",
		"", ":", ":1 2 3 4 R\x00", "1\t2\t\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		files, err := parseRawNumstat(out)
		if err != nil && files != nil {
			t.Fatalf("parseRawNumstat: an error and %d files", len(files))
		}
	})
}

func FuzzParseWorktreeList(f *testing.F) {
	for _, s := range []string{
		"worktree /a\x00HEAD 0123\x00branch refs/heads/main\x00\x00worktree /b\x00HEAD 4567\x00detached\x00locked why\x00prunable gone\x00\x00",
		"", "\x00", "HEAD x\x00", "worktree\x00bare\x00\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		wts, err := parseWorktreeList(out)
		if err != nil && wts != nil {
			t.Fatalf("parseWorktreeList: an error and %d worktrees", len(wts))
		}
	})
}

func FuzzParseCheckAttr(f *testing.F) {
	for _, s := range []string{
		"go.sum\x00linguist-generated\x00unspecified\x00a/x.pb.go\x00linguist-generated\x00set\x00",
		"two\nlines\x00linguist-generated\x00true\x00", "", "\x00", "a\x00b\x00", "a\x00b\x00c",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		attrs, err := parseCheckAttr(out)
		if err != nil {
			if attrs != nil {
				t.Fatalf("parseCheckAttr: an error and %d answers", len(attrs))
			}
			return
		}
		// What reads writes the same bytes back.
		var b strings.Builder
		for _, a := range attrs {
			b.WriteString(a.path + "\x00" + a.attr + "\x00" + a.value + "\x00")
		}
		if b.String() != string(out) {
			t.Fatalf("parseCheckAttr(%q) = %q, which reads back as %q", out, attrs, b.String())
		}
	})
}

func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"133\x0013\x00-\x0026833\x00", "", "\x00", "x\x00", "1", "-1\x00", "18446744073709551616\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		sizes, err := parseSizes(out)
		if err != nil && sizes != nil {
			t.Fatalf("parseSizes: an error and %d sizes", len(sizes))
		}
		if err == nil && len(sizes) > bytes.Count(out, []byte{0}) {
			t.Fatalf("parseSizes(%q): %d sizes from %d entries", out, len(sizes), bytes.Count(out, []byte{0}))
		}
	})
}
