package app

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// echoOnly reports whether a screen shows nothing but what an earlier screen showed and the echo
// of text typed since: the rows of before, less rows that scrolled off its top, with a prefix of
// typed inserted at one place. after is the screen now, its rows top to bottom; atBottom says
// that its cursor is on its last row, the only way the rows above can have scrolled. Whitespace
// and control characters count for nothing on either side: terminals lay text out, wrap lines and
// echo Enter as they please, and keys such as Tab and Escape show nothing of themselves.
//
// A screen the echo filled, so that nothing of before is left, is echo only if it is a part of
// typed.
func echoOnly(before, after []string, atBottom bool, typed string) bool {
	s, e := squeeze(after...), squeeze(typed)
	drops := 0
	if atBottom {
		drops = len(before)
	}
	for d := 0; d <= drops && d <= len(before); d++ {
		if inserted(squeeze(before[d:]...), s, e) {
			return true
		}
	}
	return atBottom && s != "" && strings.Contains(e, s)
}

// inserted reports whether s is b with a prefix of e inserted at one place.
func inserted(b, s, e string) bool {
	k := len(s) - len(b)
	if k < 0 || k > len(e) {
		return false
	}
	// s = b[:i] + e[:k] + b[i:] needs b[:i] to be a prefix of s and b[i:] a suffix of s: i is at
	// most their common prefix, and at least what their common suffix leaves of b.
	p := commonPrefix(b, s)
	lo := len(b) - commonSuffix(b, s)
	if lo < 0 {
		lo = 0
	}
	if lo > p {
		return false
	}
	return strings.Contains(s[lo:p+k], e[:k])
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func commonSuffix(a, b string) int {
	n := min(len(a), len(b))
	for i := 1; i <= n; i++ {
		if a[len(a)-i] != b[len(b)-i] {
			return i - 1
		}
	}
	return n
}

// squeeze joins texts with their whitespace, control characters and invalid bytes left out.
func squeeze(texts ...string) string {
	var b strings.Builder
	for _, t := range texts {
		for _, r := range t {
			if r == utf8.RuneError || unicode.IsSpace(r) || unicode.IsControl(r) {
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}
