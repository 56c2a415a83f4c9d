package tmux

import (
	"errors"
	"testing"
)

func TestQuote(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{``, `""`},
		{`plain`, `"plain"`},
		{`-t`, `"-t"`},
		{`two words`, `"two words"`},
		{`say "hi"`, `"say \"hi\""`},
		{`it's`, `"it's"`},
		{`a\b`, `"a\\b"`},
		{`$HOME ${HOME}`, `"\$HOME \${HOME}"`},
		{`~/x ~root`, `"\~/x \~root"`},
		{`#{session_name} # not a comment`, `"#{session_name} # not a comment"`},
		{`a;b ; { c }`, `"a;b ; { c }"`},
		{"line\nline\r\n", `"line\nline\r\n"`},
		{"tab\there", `"tab\there"`},
		{"\x1b[1m", `"\e[1m"`},
		{"\x00\x01\x1f\x7f", `"\000\001\037\177"`},
		{"café ✓", `"caf\303\251 \342\234\223"`},
		{"\xff\xfe", `"\377\376"`},
		{`\u0041`, `"\\u0041"`},
	} {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestCommandLine(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"display-message", "-p", "#{session_name}"}, `"display-message" "-p" "#{session_name}"` + "\n"},
		{[]string{"display", "-p", ""}, `"display" "-p" ""` + "\n"},
		{[]string{"kill-server"}, `"kill-server"` + "\n"},
		{[]string{"send-keys", "-l", "a;b\n"}, `"send-keys" "-l" "a;b\n"` + "\n"},
	} {
		got, err := commandLine(tt.args)
		if err != nil || string(got) != tt.want {
			t.Errorf("commandLine(%q) = %q, %v; want %q", tt.args, got, err, tt.want)
		}
	}
}

func TestCommandLineRefuses(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{""},
		{"A=b"},
		{"%if"},
		{"display -p x"},
		{"-p"},
		{"1abc"},
		{"display", "a\x00b"},
		{"if-shell", "true", "display -p x"},
		{"if", "true", "x"},
		{"if-s", "true", "x"},
		{"source-file", "/etc/tmux.conf"},
		{"source", "x"},
		{"run-shell", "true"},
		{"run", "true"},
		{"confirm-before", "kill-server"},
		{"confirm", "x"},
		{"command-prompt"},
		{"display-menu", "x"},
		{"menu"},
		{"display-popup"},
		{"popup"},
		{"display-panes"},
		{"displayp"},
		{"display-p"},
	} {
		if got, err := commandLine(args); !errors.Is(err, ErrRefused) {
			t.Errorf("commandLine(%q) = %q, %v; want an error wrapping ErrRefused", args, got, err)
		}
	}
	for _, name := range []string{"display", "display-message", "send-keys", "send", "capture-pane", "new-window", "refresh-client", "show-options", "set", "wait-for", "kill-server", "list-windows", "select-pane", "respawn-pane"} {
		if _, err := commandLine([]string{name}); err != nil {
			t.Errorf("commandLine(%q): %v, want no error", name, err)
		}
	}
}
