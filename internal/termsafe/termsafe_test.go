package termsafe

import "testing"

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
