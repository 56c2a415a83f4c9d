package api

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheckTitle(t *testing.T) {
	for _, ok := range []string{"", "claude", "fix #(id) bug", `"q" 'q' $HOME {} % #{pid}`, "café ✓ 日本", strings.Repeat("x", MaxTitle)} {
		if err := CheckTitle(ok); err != nil {
			t.Errorf("CheckTitle(%q): %v, want nil", ok, err)
		}
	}
	for _, tt := range []struct{ title, want string }{
		{"a\tb", "U+0009 at byte 1"},
		{"a\nb", "U+000A at byte 1"},
		{"\x1b[31mred", "U+001B at byte 0"},
		{"del\x7f", "U+007F"},
		{"c1 \u0085", "U+0085"},
		{"bad \xff", "not UTF-8"},
		{strings.Repeat("x", MaxTitle+1), "longer than 200 bytes"},
	} {
		err := CheckTitle(tt.title)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckTitle(%q) = %v, want an error saying %q", tt.title, err, tt.want)
		}
	}
}

// TestPickMessage: a pick's commit message is lines of text: tabs and newlines are its own, any
// other control character (an escape that `git log | cat` would hand the terminal, OSC 52 that
// sets the clipboard, a carriage return that hides a line, NUL, C1) is refused by the bus with
// bad_request, naming the field and the character, before anything runs.
func TestPickMessage(t *testing.T) {
	pick := func(message string) error {
		body, err := json.Marshal(PickVariantBody{Group: "g-1", Message: message})
		if err != nil {
			t.Fatal(err)
		}
		_, err = RawRequest{Name: string(PickVariant), Body: body}.Decode()
		return err
	}
	for _, ok := range []string{"", "retry: backoff", "retry: backoff\n\n\tthe body, with a tab\n", "café ✓ 日本 $HOME `x`"} {
		if err := pick(ok); err != nil {
			t.Errorf("a pick with the message %q: %v, want it accepted", ok, err)
		}
	}
	for _, tt := range []struct{ message, want string }{
		{"\x1b]52;c;ZWNobyBoaQ==\x07", "U+001B at byte 0"},
		{"a\x00b", "U+0000 at byte 1"},
		{"line\rhidden", "U+000D at byte 4"},
		{"c1 \u009b31m", "U+009B"},
		{"del\x7f", "U+007F"},
	} {
		err := pick(tt.message)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeBadRequest || !strings.Contains(e.Message, "message") || !strings.Contains(e.Message, tt.want) {
			t.Errorf("a pick with the message %q: %v, want bad_request naming message and %s", tt.message, err, tt.want)
		}
	}
	if err := CheckPickMessage("bad \xff"); err == nil || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("CheckPickMessage of bytes that are not UTF-8: %v", err)
	}
}

func TestCleanTitle(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain #{x} title", "plain #{x} title"},
		{"a\tb\nc", "a b c"},
		{"a\t\n\x1bb", "a b"},
		{"\n lead.sh \t", "lead.sh"},
		{"bad\xff\xfeutf8", "bad utf8"},
		{"\x00\x01", ""},
		{strings.Repeat("é", MaxTitle), strings.Repeat("é", MaxTitle/2)},
	} {
		if got := CleanTitle(tt.in); got != tt.want {
			t.Errorf("CleanTitle(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzCleanTitle: whatever the text, CleanTitle gives a title CheckTitle accepts, and leaves a
// title CheckTitle accepts as it was (but for spaces at its ends).
func FuzzCleanTitle(f *testing.F) {
	for _, s := range []string{"", "a\tb", "x\xffy", "é" + strings.Repeat("x", MaxTitle), " a\n%begin 1 2 1\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := CleanTitle(s)
		if err := CheckTitle(c); err != nil {
			t.Fatalf("CleanTitle(%q) = %q, which CheckTitle refuses: %v", s, c, err)
		}
		if !utf8.ValidString(c) || c != strings.TrimSpace(c) {
			t.Fatalf("CleanTitle(%q) = %q", s, c)
		}
		if CheckTitle(s) == nil && c != strings.TrimSpace(s) {
			t.Fatalf("CleanTitle(%q) = %q, want the title as it was", s, c)
		}
	})
}

func TestProgramTitle(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want string
	}{
		{nil, ""},
		{[]string{"claude", "--resume"}, "claude"},
		{[]string{"/usr/local/bin/claude"}, "claude"},
		{[]string{"./odd\tname\n"}, "odd name"},
		{[]string{"dir/"}, ""},
	} {
		if got := ProgramTitle(tt.argv); got != tt.want {
			t.Errorf("ProgramTitle(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}

func TestShellTitle(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"claude", "claude"},
		{"./lead.sh; bash", "lead.sh"},
		{"./lead.sh;bash", "lead.sh"},
		{"  FOO=1 BAR=2 exec /usr/bin/python3 -m x", "python3"},
		{"BAR='a b' claude", "BAR='a b' claude"},
		{"(cd src && make)", "cd"},
		{"make|tee log", "make"},
		{"vim>out", "vim"},
		{"sleep 1 &", "sleep"},
		{`"$EDITOR" notes`, `"$EDITOR" notes`},
		{"a\tb", "a"},
		{"x=1\n", "x=1"},
	} {
		if got := ShellTitle(tt.line); got != tt.want {
			t.Errorf("ShellTitle(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

// FuzzShellTitle: whatever a config.toml's command line holds, the title made of it is one
// CheckTitle accepts, trimmed.
func FuzzShellTitle(f *testing.F) {
	for _, s := range []string{"", "claude", "./lead.sh; bash", "FOO=1 exec /usr/bin/python3", "BAR='a b' claude", "(cd src && make)",
		`"$EDITOR" notes`, "a\tb", "x=1\n", "exec", "=", "/", "(((", "é\xff/\x1b[2J", strings.Repeat("x/", MaxTitle)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		title := ShellTitle(line)
		if err := CheckTitle(title); err != nil {
			t.Fatalf("ShellTitle(%q) = %q, which CheckTitle refuses: %v", line, title, err)
		}
		if title != strings.TrimSpace(title) {
			t.Fatalf("ShellTitle(%q) = %q, not trimmed", line, title)
		}
	})
}

// FuzzProgramTitle: whatever a Spawn's argv[0] holds, the title made of it is one CheckTitle
// accepts, trimmed, and holds no '/'.
func FuzzProgramTitle(f *testing.F) {
	for _, s := range []string{"", "claude", "/usr/local/bin/claude", "dir/", "./odd\tname\n", "\xff/\x00", strings.Repeat("é", MaxTitle)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, argv0 string) {
		title := ProgramTitle([]string{argv0, "--arg"})
		if err := CheckTitle(title); err != nil {
			t.Fatalf("ProgramTitle(%q) = %q, which CheckTitle refuses: %v", argv0, title, err)
		}
		if title != strings.TrimSpace(title) || strings.Contains(title, "/") {
			t.Fatalf("ProgramTitle(%q) = %q", argv0, title)
		}
	})
}
