package app

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestEchoOnly: the screens a shell, a REPL and a TUI show while text is typed into them, and
// after they react.
func TestEchoOnly(t *testing.T) {
	t.Parallel()
	full := func(last ...string) []string { // a 4-row screen, full
		return append([]string{"one", "two", "three", "four"}[len(last):], last...)
	}
	for _, tt := range []struct {
		name          string
		before, after []string
		atBottom      bool
		typed         string
		want          bool
	}{
		{"nothing yet", []string{"$", ""}, []string{"$", ""}, false, "echo hi", true},
		{"half typed", []string{"$", ""}, []string{"$ ech", ""}, false, "echo hi", true},
		{"the echo", []string{"$", ""}, []string{"$ echo hi", ""}, false, "echo hi", true},
		{"the answer", []string{"$", ""}, []string{"$ echo hi", "hi"}, false, "echo hi", false},
		{"the next prompt", []string{"$", "", ""}, []string{"$ true", "$", ""}, false, "true", false},
		{"the same command again", []string{"$ echo hi", "hi", "$"}, []string{"$ echo hi", "hi", "$ echo hi"}, false, "echo hi", true},
		{"the same answer again", []string{"$ echo hi", "hi", "$", ""}, []string{"$ echo hi", "hi", "$ echo hi", "hi"}, false, "echo hi", false},
		{"a prompt ending as the echo does", []string{"$"}, []string{"$ echo $"}, false, "echo $", true},
		{"text right of the cursor", []string{"% [main]"}, []string{"% echo hi     [main]"}, false, "echo hi", true},
		{"wrapped", []string{"$ ", ""}, []string{"$ aaaa", "bbbb"}, false, "aaaabbbb", true},
		{"scrolled by the echo", full("$"), full("$ echo hi", ""), true, "echo hi", true},
		{"scrolled by the answer", full("$"), full("$ echo hi", "hi", ""), true, "echo hi", false},
		{"no scroll without the cursor at the bottom", full("$"), []string{"$", "", "", ""}, false, "clear", false},
		{"cleared", full("$"), []string{"$", "", "", ""}, false, "clear", false},
		{"an echo longer than the screen", full("$"), []string{"cc", "dd", "ee", ""}, true, "aa bb cc dd ee", true},
		{"not echoed", []string{"Password:"}, []string{"Password:", ""}, false, "hunter2", true},
		{"a TUI redraw", []string{"hay 1", ":"}, []string{"needle", ":"}, false, "/needle", false},
		{"keys that show nothing", []string{"$"}, []string{"$"}, false, "	", true},
	} {
		if got := echoOnly(tt.before, tt.after, tt.atBottom, tt.typed); got != tt.want {
			t.Errorf("%s: echoOnly(%q, %q, %v, %q) = %v, want %v", tt.name, tt.before, tt.after, tt.atBottom, tt.typed, got, tt.want)
		}
	}
}

// FuzzEchoOnly: a screen with part of the text inserted anywhere is echo only; nothing panics on
// any screen.
func FuzzEchoOnly(f *testing.F) {
	f.Add("$ ", "echo hi", 2, 4)
	f.Add("hay 1\n:", "/needle", 5, 7)
	f.Add("", "", 0, 0)
	f.Fuzz(func(t *testing.T, before, typed string, at, k int) {
		rows := strings.Split(before, "\n")
		echoOnly(rows, strings.Split(typed, "\n"), at%2 == 0, before)
		b, e := squeeze(before), squeeze(typed)
		if at < 0 || k < 0 {
			return
		}
		at, k = at%(len(b)+1), k%(len(e)+1)
		for at > 0 && at < len(b) && !utf8.RuneStart(b[at]) { // a screen holds whole characters
			at--
		}
		for k > 0 && k < len(e) && !utf8.RuneStart(e[k]) {
			k--
		}
		after := b[:at] + e[:k] + b[at:]
		if !echoOnly(rows, []string{after}, false, typed) {
			t.Fatalf("%q with %q typed at %d is not echo only of %q", after, e[:k], at, b)
		}
	})
}
