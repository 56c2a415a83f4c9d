package shell

import (
	"errors"
	"strings"
	"testing"
	"unicode"
)

// FuzzFrame: any output gives either the lines between the first begin marker and the end marker
// after it, or a *NoiseError whose message is short and holds no control characters.
func FuzzFrame(f *testing.F) {
	s := Script{Name: "FUZZ"}
	b, e := s.Begin(), s.End()
	for _, seed := range []string{
		"",
		b + "\nok\n" + e + "\n",
		"motd\n" + b + "\nok\n/home/u\n" + e + "\nlogout\n",
		"x" + b + "\n" + e,
		b + "\nok\n",
		b + "\r\nok\r\n" + e + "\r\n",
		b + "\nok\r\n" + e + "\n",
		"\x1b]0;title\x07\xff\xfe" + b,
		strings.Repeat("noise ", 2000),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		lines, err := s.Frame(out)
		if err != nil {
			var ne *NoiseError
			if !errors.As(err, &ne) {
				t.Fatalf("got error %T %v, want a *NoiseError", err, err)
			}
			msg := err.Error()
			if strings.ContainsFunc(msg, func(r rune) bool { return unicode.IsControl(r) }) {
				t.Fatalf("the message holds control characters: %q", msg)
			}
			if len(msg) > 2000 {
				t.Fatalf("the message is %d bytes long", len(msg))
			}
			if strings.Contains(string(out), b+"\n") && !ne.Began {
				t.Fatalf("the begin marker came, but the error says it did not")
			}
			return
		}
		body := strings.Join(lines, "\n")
		if len(lines) > 0 {
			body += "\n"
		}
		if !strings.Contains(string(out), b+"\n"+body+e) {
			t.Fatalf("got %q, which is not what came between the markers of %q", lines, out)
		}
		for _, l := range lines {
			if l == e || strings.Contains(l, "\n") {
				t.Fatalf("got the line %q", l)
			}
		}
	})
}

// FuzzEndedSessions: any output of EndSessions gives a count that is not negative, or an error
// whose message is short and holds no control characters.
func FuzzEndedSessions(f *testing.F) {
	b, e := EndSessions.Begin(), EndSessions.End()
	for _, seed := range []string{"", b + "\nok\n3\n" + e + "\n", b + "\nok\n-1\n" + e + "\n", b + "\nok\n\x1b[2J\n" + e + "\n", b + "\nfailed\nread /proc\n" + e + "\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		n, err := EndedSessions(out, nil)
		if err == nil {
			if n < 0 {
				t.Fatalf("got %d processes", n)
			}
			return
		}
		msg := err.Error()
		if strings.ContainsFunc(msg, func(r rune) bool { return unicode.IsControl(r) }) || len(msg) > 2000 {
			t.Fatalf("the message is %d bytes, or holds control characters: %q", len(msg), msg)
		}
	})
}
