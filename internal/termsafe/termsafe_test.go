package termsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain text", 100, "plain text"},
		{"\x1b]0;pwned\a", 100, `\x1b]0;pwned\a`},
		{"tab\there", 100, `tab\there`},
		{"bad \xff byte", 100, `bad \xff byte`},
		{"a real \uFFFD stays", 100, "a real \uFFFD stays"},
		{"abcdef", 3, "abc…"},
	} {
		if got := Escape(tt.in, tt.max); got != tt.want {
			t.Errorf("Escape(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestLastLine(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"", 100, ""},
		{"one line", 100, "one line"},
		{"first\n  last said  \n\n \r\n", 100, "last said"},
		{"first\r\nsecond\r\n", 100, "second"},
		{"ok\n\x1b]0;pwned\a\n", 100, `\x1b]0;pwned\a`},
		{"ok\nabcdef", 3, "abc…"},
	} {
		if got := LastLine(tt.in, tt.max); got != tt.want {
			t.Errorf("LastLine(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"fine":        "fine",
		"line\nbreak": `"line\nbreak"`,
		"\xff":        `"\xff"`,
		"\x1b[2J":     `"\x1b[2J"`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestQuoteMax(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"fine", 10, "fine"},
		{"abcdef", 3, "abc…"},
		{"\x1b[2J and more", 4, `"\x1b[2J"…`},
		{"héllo", 2, "h…"}, // not in the middle of é
	} {
		if got := QuoteMax(tt.in, tt.max); got != tt.want {
			t.Errorf("QuoteMax(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestShorten(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"fine", 10, "fine"},
		{"fine", 4, "fine"},
		{"abcdef", 3, "abc…"},
		{"héllo", 2, "h…"},                          // not in the middle of é
		{"a\xff\x1b[2J and more", 4, "a\xff\x1b[…"}, // kept for %q to escape
	} {
		if got := Shorten(tt.in, tt.max); got != tt.want {
			t.Errorf("Shorten(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"fine", 10, "fine"},
		{"fine", 4, "fine"},
		{"abcdef", 3, "abc"},
		{"héllo", 2, "h"},                       // not in the middle of é
		{"a😀b", 4, "a"},                         // nor of a character of four bytes
		{"a😀b", 5, "a😀"},                        // which fits
		{"\x80\x80\x80\x80\x80", 2, "\x80\x80"}, // bytes that are no UTF-8 count alone
		{"abc", 0, ""},
		{"abc", -1, ""},
	} {
		if got := Cut(tt.in, tt.n); got != tt.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// FuzzCut: Cut keeps a prefix of at most n bytes, and UTF-8 text stays UTF-8.
func FuzzCut(f *testing.F) {
	f.Add("héllo wörld", 3)
	f.Add("\xff\xfe😀", 2)
	f.Fuzz(func(t *testing.T, s string, n int) {
		c := Cut(s, n)
		if len(c) > max(0, n) || !strings.HasPrefix(s, c) {
			t.Fatalf("Cut(%q, %d) = %q", s, n, c)
		}
		if utf8.ValidString(s) && !utf8.ValidString(c) {
			t.Fatalf("Cut(%q, %d) = %q, not UTF-8", s, n, c)
		}
		if len(s) > n && n >= utf8.UTFMax && len(c) < n-(utf8.UTFMax-1) {
			t.Fatalf("Cut(%q, %d) = %q, cut more than a character short", s, n, c)
		}
	})
}
