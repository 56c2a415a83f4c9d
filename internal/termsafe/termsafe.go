// Package termsafe makes text that came from outside (a host's output, a file, an answer, an
// argument) safe to put in a message a person reads on a terminal: nothing in it can move the
// cursor, change the title or otherwise act on the terminal.
package termsafe

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape escapes what is not graphic in s (control characters as Go escapes, a byte that is not
// UTF-8 as \xNN) and cuts it to about max bytes, marking the cut with "…".
func Escape(s string, max int) string {
	var b strings.Builder
	for i, r := range s {
		if b.Len() >= max {
			b.WriteString("…")
			break
		}
		switch {
		case r == utf8.RuneError && invalidAt(s[i:]):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsGraphic(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

// LastLine is the last line of s that is not blank, without the white space around it, escaped
// and cut to about max bytes: what another program said last (its stderr), for an error.
func LastLine(s string, max int) string {
	s = strings.TrimRight(s, " \t\r\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return Escape(strings.TrimSpace(s), max)
}

// invalidAt reports whether s starts with a byte that is not valid UTF-8.
func invalidAt(s string) bool {
	r, size := utf8.DecodeRuneInString(s)
	return r == utf8.RuneError && size == 1
}

// QuoteMax is Quote of s cut to at most n bytes (with Cut), the cut marked with "…" after the
// quotes: for text from outside whose length nothing bounds, such as a line a host sent.
func QuoteMax(s string, n int) string {
	c := Cut(s, n)
	if len(c) == len(s) {
		return Quote(s)
	}
	return Quote(c) + "…"
}

// Shorten returns s cut to at most n bytes with Cut, the cut marked with "…": for text from
// outside in a message that then quotes it (%q), which escapes whatever Cut kept.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Cut(s, n) + "…"
}

// Cut returns s cut to at most n bytes, between characters: never inside a UTF-8 sequence, so
// that text that was UTF-8 stays so. Bytes that are not UTF-8 count as characters of one byte.
func Cut(s string, n int) string {
	switch {
	case len(s) <= n:
		return s
	case n <= 0:
		return ""
	}
	cut := n
	if utf8.RuneStart(s[cut]) {
		return s[:cut]
	}
	// The byte at cut continues a character when one starts at most utf8.UTFMax-1 bytes before
	// and runs past cut; a byte that continues nothing counts alone.
	for p := cut - 1; p >= 0 && p > cut-utf8.UTFMax; p-- {
		if utf8.RuneStart(s[p]) {
			if r, size := utf8.DecodeRuneInString(s[p:]); (r != utf8.RuneError || size > 1) && p+size > cut {
				cut = p
			}
			break
		}
	}
	return s[:cut]
}

// Quote returns s as it is when it is valid UTF-8 of printable characters, else Go-quoted.
func Quote(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
