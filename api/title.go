package api

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A title is one line of text that people read: in lists, in tmux's status line, as a window's
// name. It may hold any printable text (quotes, '#', '%', '$', braces, any script), but no control
// character: a tab or a newline would break every line-based view of it (tmux's own formats
// included), and an escape would drive the terminal that shows it. CheckTitle is the rule for
// titles a caller chooses (Spawn, config.toml), which are refused; CleanTitle makes a title of
// text the app did not choose (a window's name, a command), which has to become one.

// CheckTitle says why title cannot be a terminal's title, or returns nil. The empty title passes:
// whether one is needed is the caller's rule.
func CheckTitle(title string) error { return CheckText("title", title, MaxTitle) }

// CheckText is the rule of titles for other text that people read as one line (a group's name):
// it says why s, called what, is not UTF-8 text of at most max bytes without a control character,
// or returns nil.
func CheckText(what, s string, max int) error {
	return checkText(what, s, max, false, "(a tab, a newline or an escape is not text): a "+what+" is one line of text")
}

// CheckLines is the rule of titles for text that people read as lines (a commit's message, which
// `git log` prints to their terminal as it is): tabs and newlines are its own, but no other
// control character (C0, DEL, C1: an escape would drive the terminal that shows it, a carriage
// return hide what came before it on its line). It says why s, called what, is not such UTF-8
// text of at most max bytes, or returns nil.
func CheckLines(what, s string, max int) error {
	return checkText(what, s, max, true, "(an escape, a carriage return or a NUL is not text): a "+what+" is lines of text, tabs and newlines its only control characters")
}

// checkText is CheckText's and CheckLines's rule, with tab and newline allowed when lines is set;
// why follows the refusal of a control character.
func checkText(what, s string, max int, lines bool, why string) error {
	if len(s) > max {
		return fmt.Errorf("%s is longer than %d bytes", what, max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not UTF-8 text", what)
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && !(lines && (r == '\n' || r == '\t')) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Errorf("%s holds the control character %U at byte %d %s", what, r, i, why)
	}
	return nil
}

// CleanTitle makes a title of s, text from outside that CheckTitle might refuse: each run of
// control characters and bytes that are not UTF-8 becomes one space, spaces at the ends are
// trimmed, and the result is cut to at most MaxTitle bytes, between characters. It may be empty.
// A title CheckTitle accepts comes back as it was, but for spaces at its ends.
func CleanTitle(s string) string { return cleanLine(s, MaxTitle) }

// CleanMessage makes the one line of a report's message of s, as CleanTitle makes a title, cut to
// at most MaxReportMessage bytes: an agent's hook passes on what its CLI wrote.
func CleanMessage(s string) string { return cleanLine(s, MaxReportMessage) }

// cleanLine is CleanTitle's rule, cut to max bytes.
func cleanLine(s string, max int) string {
	var b strings.Builder
	bad := false
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if r == utf8.RuneError && n <= 1 || unicode.IsControl(r) {
			if !bad {
				b.WriteByte(' ')
			}
			bad = true
			continue
		}
		bad = false
		b.WriteString(s[i-n : i])
	}
	t := strings.TrimSpace(b.String())
	if len(t) > max {
		// t is UTF-8 (what was not became spaces): cut before the character that runs past.
		cut := max
		for !utf8.RuneStart(t[cut]) {
			cut--
		}
		t = t[:cut]
	}
	return strings.TrimSpace(t)
}

// ProgramTitle is the title of a terminal that runs argv and was given none: the program's name
// (argv[0] after its last '/'), clean. It is "" when argv is empty or names nothing.
func ProgramTitle(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	p := argv[0]
	p = p[strings.LastIndexByte(p, '/')+1:]
	return CleanTitle(p)
}

// ShellTitle is the title of a terminal that runs the shell command line and was given none: the
// name of the program it starts, clean. That is the first word that is not a variable assignment
// (FOO=1) or exec, up to the first character the shell reads as more than a word's letters
// (`./lead.sh; bash` gives "lead.sh", `(cd src && make)` gives "cd"), after its last '/'. When the
// line names no program plainly (`"$EDITOR" x`), it is the whole line, clean.
func ShellTitle(line string) string {
	for _, w := range strings.Fields(line) {
		w = strings.TrimLeft(w, "({!")
		special := strings.IndexAny(w, ";&|<>()`$'\"\\{}*?[#~")
		if eq := strings.IndexByte(w, '='); eq > 0 && (special < 0 || special > eq) {
			if special >= 0 {
				break // a value with quotes or the like: where it ends is the shell's to say
			}
			continue // an assignment
		}
		if special >= 0 {
			w = w[:special]
		}
		if w == "exec" {
			continue
		}
		if t := ProgramTitle([]string{w}); t != "" {
			return t
		}
		break
	}
	return CleanTitle(line)
}
