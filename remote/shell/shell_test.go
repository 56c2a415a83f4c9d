package shell

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

var echoArgs = Script{Name: "TEST", Body: `
for a in "$@"; do printf '%s|' "$a"; done;
krad_say ok "$#";
`}

// sh runs a command line the way a login shell would, with sh -c.
func sh(t *testing.T, command string) (string, error) {
	t.Helper()
	out, err := exec.Command("sh", "-c", command).Output()
	return string(out), err
}

func TestCommandCarriesArguments(t *testing.T) {
	args := []string{"", "plain", "two words", "it's", `"double"`, "$HOME", "`id`", "$(id)", "a;b", "*", "~", "-n", "tab\there", "ü"}
	cmd := echoArgs.Command(args...)
	if strings.ContainsAny(cmd, "\n\r") {
		t.Fatalf("the command has a line break: %q", cmd)
	}
	out, err := sh(t, cmd)
	if err != nil {
		t.Fatalf("sh -c %q: %v", cmd, err)
	}
	want := strings.Join(args, "|") + "|" + echoArgs.Begin() + "\nok\n14\n" + echoArgs.End() + "\n"
	if out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

// TestWord: what Word gives is one word to sh, the text given, and bare only when it is plain.
func TestWord(t *testing.T) {
	for _, tt := range []struct {
		in   string
		bare bool
	}{
		{"/home/u/.config/krad-ade", true},
		{"u@buildbox:2222", true},
		{"a-b_c.d+e%f,g=h", true},
		{"", false},
		{"two words", false},
		{"it's", false},
		{"~/x", false},
		{"$HOME", false},
		{"`id`", false},
		{"a;b", false},
		{"*", false},
		{"=ls", false},
		{"tab\there", false},
		{"ü", false},
	} {
		w := Word(tt.in)
		if (w == tt.in) != tt.bare {
			t.Errorf("Word(%q) = %q; want it bare: %v", tt.in, w, tt.bare)
		}
		out, err := sh(t, "printf '%s|' "+w)
		if err != nil || out != tt.in+"|" {
			t.Errorf("sh -c \"printf '%%s|' %s\" printed %q, %v; want %q", w, out, err, tt.in+"|")
		}
	}
}

func TestCommandSyntax(t *testing.T) {
	// The prelude, joined into one line, parses under the system's sh (dash on Debian).
	cmd := exec.Command("sh", "-n")
	cmd.Stdin = strings.NewReader(Script{Name: "SYNTAX", Body: "krad_say ok;"}.script())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sh -n: %v\n%s", err, out)
	}
}

func TestCommandPanics(t *testing.T) {
	for _, s := range []Script{
		{Name: "", Body: "krad_say ok;"},
		{Name: "lower", Body: "krad_say ok;"},
		{Name: "X", Body: `echo "a\\b";`},
		{Name: "X", Body: `echo 'it\'s';`},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Script{%q, %q}.Command() did not panic", s.Name, s.Body)
				}
			}()
			s.Command()
		}()
	}
}

func TestFrame(t *testing.T) {
	s := Script{Name: "T"}
	b, e := s.Begin(), s.End()
	tests := []struct {
		name, out string
		want      []string // nil: an error
		began     bool     // for an error: whether the begin marker came
	}{
		{"bare", b + "\nok\n" + e + "\n", []string{"ok"}, false},
		{"noise around", "Welcome!\n\x1b[31mred\n" + b + "\nok\nx\n" + e + "\nbye\n", []string{"ok", "x"}, false},
		{"noise on the marker's line", "no newline" + b + "\nok\n" + e + "\n", []string{"ok"}, false},
		{"crlf", b + "\r\n" + "ok\r\n" + e + "\r\n", nil, false},
		{"end without newline", b + "\nok\n" + e, []string{"ok"}, false},
		{"empty frame", b + "\n" + e + "\n", []string{}, false},
		{"nothing", "", nil, false},
		{"only noise", "hello from .bashrc\n", nil, false},
		{"cut short", b + "\nok\n", nil, true},
		{"begin as a prefix", b + "X\nok\n" + e + "\n", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Frame([]byte(tt.out))
			if tt.want == nil {
				var ne *NoiseError
				if !errors.As(err, &ne) {
					t.Fatalf("got %q, %v; want a *NoiseError", got, err)
				}
				if ne.Began != tt.began {
					t.Errorf("got Began %v, want %v", ne.Began, tt.began)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want %q", err, tt.want)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") || len(got) != len(tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNoiseErrorQuotes(t *testing.T) {
	s := Script{Name: "T"}
	_, err := s.Frame([]byte("Welcome\x1b[2J to " + strings.Repeat("x", 1000) + "\n"))
	msg := err.Error()
	if strings.ContainsAny(msg, "\x1b\n") {
		t.Errorf("the message holds control characters: %q", msg)
	}
	if !strings.Contains(msg, `"Welcome\x1b[2J to xxx`) || !strings.Contains(msg, "~/.bashrc") {
		t.Errorf("got %q, want the noise quoted and escaped, and a hint about ~/.bashrc", msg)
	}
	if len(msg) > 500 {
		t.Errorf("the message is %d bytes long, want it shortened", len(msg))
	}
	_, err = s.Frame(nil)
	if got := err.Error(); !strings.Contains(got, "printed nothing") {
		t.Errorf("got %q for no output, want it to say nothing came", got)
	}
}

func TestResult(t *testing.T) {
	s := Script{Name: "T"}
	frame := func(lines ...string) []byte {
		return []byte(s.Begin() + "\n" + strings.Join(append(lines, s.End()), "\n") + "\n")
	}
	runErr := errors.New("exit status 1 on the host: mkdir: No space left on device")

	got, err := s.Result(frame("ok", "/home/u/x"), nil)
	if err != nil || len(got) != 1 || got[0] != "/home/u/x" {
		t.Errorf("ok: got %q, %v", got, err)
	}

	_, err = s.Result(frame("refused", "symlink", "~/.krad-ade/run"), errors.New("exit status 3"))
	var re *RefusedError
	if !errors.As(err, &re) || re.Reason != "symlink" || re.Path != "~/.krad-ade/run" {
		t.Fatalf("refused: got %v, want a *RefusedError", err)
	}
	if want := "~/.krad-ade/run is a symbolic link: refused; remove it"; err.Error() != want {
		t.Errorf("refused: got %q, want %q", err, want)
	}

	_, err = s.Result(frame("failed", "create ~/.krad-ade"), runErr)
	if !errors.Is(err, runErr) || err.Error() != "create ~/.krad-ade: "+runErr.Error() {
		t.Errorf("failed: got %v, want the step and the run's error", err)
	}

	_, err = s.Result([]byte("junk"), runErr)
	if err != runErr {
		t.Errorf("no frame, run failed: got %v, want the run's error", err)
	}
	_, err = s.Result([]byte("junk"), nil)
	var ne *NoiseError
	if !errors.As(err, &ne) {
		t.Errorf("no frame: got %v, want a *NoiseError", err)
	}
	if _, err = s.Result(frame("ok"), runErr); !errors.Is(err, runErr) {
		t.Errorf("ok then a failure: got %v, want the run's error", err)
	}
	for _, f := range [][]string{{}, {"maybe"}, {"refused", "x"}, {"failed"}} {
		if got, err := s.Result(frame(f...), nil); err == nil {
			t.Errorf("frame %q: got %q, want an error", f, got)
		}
	}
}

func TestRefusedErrorEscapes(t *testing.T) {
	err := &RefusedError{Path: "~/.krad-ade/run/a\x1b[31m\nb", Reason: "owner"}
	if strings.ContainsAny(err.Error(), "\x1b\n") {
		t.Errorf("got %q, want control characters escaped", err)
	}
}
