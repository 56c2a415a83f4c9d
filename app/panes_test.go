package app

import (
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
)

// endInRange reports whether a pane's end is one a process can have: a code from 0 to 255 once
// known (-1 when tmux's was out of range), -1 while not known.
func endInRange(e paneEnd) bool {
	if e.known {
		return e.code >= -1 && e.code <= 255
	}
	return e.code == -1
}

// FuzzParseWindowLine: whatever a line of list-windows holds (a host's tmux writes it), what the
// app keeps of it is in range: ids, an exit code a process can have, and a @krad whose number,
// lead, role, session, group and spec are ones the app writes, with a title that is one line of
// text, so that an agent made of it stays small.
func FuzzParseWindowLine(f *testing.F) {
	f.Add(`@1 %1 0   0 {"terminal":1,"title":"lead","role":"lead","session":"build:1","spec":"0123456789abcdef"}`)
	f.Add(`@3 %7 1 3  0 {"terminal":2,"title":"w","role":"worker","session":"build:1","lead":1,"runs":true}`)
	f.Add(`@3 %7 1  9 0 {"terminal":9223372036854775807,"title":"x","role":"lead"}`)
	f.Add(`@3 %7 1 99999999999999999999  0 {"terminal":3,"title":"\u0001\u0002","role":"root","session":"main:1"}`)
	f.Add(`@0 %0 0   1 `)
	f.Add("")
	f.Fuzz(func(t *testing.T, line string) {
		w, err := parseWindowLine(line, "build")
		if err != nil {
			return
		}
		if w.window < 0 || w.pane < 0 {
			t.Fatalf("negative ids from %q", line)
		}
		if !endInRange(w.end) {
			t.Fatalf("end %+v from %q", w.end, line)
		}
		m := w.meta
		if m == nil {
			return
		}
		if m.Terminal < 1 || m.Terminal > MaxTerminalNumber || m.Lead < 0 || m.Lead > MaxTerminalNumber {
			t.Fatalf("terminal %d, lead %d from %q", m.Terminal, m.Lead, line)
		}
		if m.Role != api.RoleShell && m.Role != api.RoleLead && m.Role != api.RoleWorker {
			t.Fatalf("role %q from %q", m.Role, line)
		}
		if m.Session != "" {
			if id, err := api.ParseTerminalID(m.Session); err != nil || id.Environment != "build" {
				t.Fatalf("session %q from %q", m.Session, line)
			}
		}
		if api.CheckTitle(m.Title) != nil || m.Title == "" || api.CheckText("group", m.Group, maxGroup) != nil || m.Spec != "" && !isSpecKey(m.Spec) {
			t.Fatalf("title %q, group %q, spec %q from %q", m.Title, m.Group, m.Spec, line)
		}
	})
}

// FuzzParseDead: whatever a %subscription-changed value or a display-message answer holds (a
// host's tmux writes them), deadFormat's parse gives an end a process can have, and a status or
// signal it refuses is an error with the code -1.
func FuzzParseDead(f *testing.F) {
	for _, s := range []string{"1 0 ", "1  9", "1  ", "0  ", "1 3 0", "1 256 ", "1  128", "1 -1 ", "1 99999999999999999999 ", "", "1", "1 0", "1 0  x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		end, err := parseDead(strings.Split(s, " "))
		if !endInRange(end) {
			t.Fatalf("end %+v from %q", end, s)
		}
		if err != nil && (end.code != -1 || !end.known) {
			t.Fatalf("end %+v with error %v from %q", end, err, s)
		}
		if f := strings.Split(s, " "); end.dead != (len(f) >= 3 && f[0] == "1") {
			t.Fatalf("dead %v from %q", end.dead, s)
		}
	})
}

func TestParseDead(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		value string
		want  paneEnd
		bad   bool
	}{
		{"0  ", paneEnd{code: -1}, false},
		{"1  ", paneEnd{dead: true, code: -1}, false},
		{"1 0 ", paneEnd{dead: true, code: 0, known: true}, false},
		{"1 3 ", paneEnd{dead: true, code: 3, known: true}, false},
		{"1  9", paneEnd{dead: true, code: 137, known: true}, false},
		{"1 300 ", paneEnd{dead: true, code: -1, known: true}, true},
		{"1 0", paneEnd{code: -1}, false}, // two fields: not deadFormat's
	} {
		got, err := parseDead(strings.Split(tt.value, " "))
		if got != tt.want || (err != nil) != tt.bad {
			t.Errorf("parseDead(%q) = %+v, %v; want %+v, error %v", tt.value, got, err, tt.want, tt.bad)
		}
	}
}

// FuzzParsePaneAnswers: whatever tmux answers to the listing of window indexes, to new-window and
// to numbering's display-message, what the app keeps is in range: ids, an index a window can have,
// and a window name that is the rest of the answer.
func FuzzParsePaneAnswers(f *testing.F) {
	for _, s := range []string{"@1 0 1", "@3 7 0", "@3 2147483648 0", "@-1 2 0", "@1 %2", "@1 %-2", "%4 0 my shell", "%4 1 ", "%x 0 a", "", "@1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if w, i, _, err := parseIndexLine(s); err == nil && (w < 0 || i < 0 || i > MaxTerminalNumber) {
			t.Fatalf("window %d at %d from %q", w, i, s)
		}
		if w, p, err := parseNewWindow([]string{s}); err == nil && (w < 0 || p < 0) {
			t.Fatalf("window %d, pane %d from %q", w, p, s)
		}
		p, holder, name, err := parseStranger(strings.Split(s, "\n"))
		switch {
		case holder && (p != 0 || name != "" || err != nil):
			t.Fatalf("the holder with pane %d, name %q, error %v from %q", p, name, err, s)
		case err == nil && !holder && (p < 0 || !strings.HasSuffix(s, name)):
			t.Fatalf("pane %d, name %q from %q", p, name, s)
		}
	})
}

// FuzzParseGlance: whatever tmux answers to a look's display-message, a glance that is read has
// its numbers in range and the command is what follows them on the first line.
func FuzzParseGlance(f *testing.F) {
	for _, s := range []string{"0 0 24 4242 bash", "5 23 24 1 python3 -i", "0 0 24 1 ", "0 0 24 1", "-1 0 24 1 sh", "0 0 24 0 sh", "0 0 24 99999999999999999999 sh", "a b c d", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := parseGlance(strings.Split(s, "\n"))
		if err != nil {
			return
		}
		if g.x < 0 || g.y < 0 || g.height < 0 || g.pid < 1 {
			t.Fatalf("glance %+v from %q", g, s)
		}
		if first, _, _ := strings.Cut(s, "\n"); !strings.HasSuffix(first, g.command) {
			t.Fatalf("command %q is not the end of %q", g.command, first)
		}
	})
}

// FuzzParseTPGID: whatever a /proc/PID/stat holds (a command's name may hold anything, ')' and
// spaces included), the foreground group read from it is a positive number or 0.
func FuzzParseTPGID(f *testing.F) {
	for _, s := range []string{
		"4242 (bash) S 4241 4242 4242 34816 4300 4194560 0",
		"4242 (a) b) c) S 1 2 3 4 77 0",
		"4242 (x) S 1 2 3 4 -1 0",
		"4242 (x) S 1 2",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if n := parseTPGID(b); n < 0 {
			t.Fatalf("tpgid %d from %q", n, b)
		}
	})
}

func TestParseGlanceAndTPGID(t *testing.T) {
	t.Parallel()
	g, err := parseGlance([]string{"3 23 24 4242 python3 -i"})
	if err != nil || g != (paneGlance{x: 3, y: 23, height: 24, pid: 4242, command: "python3 -i"}) {
		t.Errorf("parseGlance = %+v, %v", g, err)
	}
	for _, bad := range []string{"-1 0 24 1 sh", "0 0 24 0 sh", "0 0 24", ""} {
		if _, err := parseGlance([]string{bad}); err == nil {
			t.Errorf("parseGlance(%q) read it", bad)
		}
	}
	if n := parseTPGID([]byte("4242 (a) b) S 1 2 3 4 77 0")); n != 77 {
		t.Errorf("parseTPGID = %d, want 77: the fields follow the last ')'", n)
	}
	if n := parseTPGID([]byte("4242 (x) S 1 2 3 4 -1 0")); n != 0 {
		t.Errorf("parseTPGID of a terminal with no foreground = %d, want 0", n)
	}
}
