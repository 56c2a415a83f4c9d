package tmux

import (
	"fmt"
	"strings"
)

// Quote quotes arg for tmux's command parser so that it arrives as exactly one argument, byte for
// byte, whatever it holds: quotes, backslashes, $, ~, #, ;, braces, newlines, control characters,
// invalid UTF-8, a leading '-'. The result is a double-quoted string in which the parser's special
// characters are escaped: \" \\ \$ \~ (so nothing is expanded), \n \r \t \e, and every other byte
// below 0x20 or from 0x7f up as a three-digit octal escape (\303\251 for "é"). Outside double
// quotes those bytes could end the command (; and newline), start a comment (#) or a block ({),
// and a raw 0xff byte reads as end of input to tmux 3.3's parser on machines where char is signed.
//
// A NUL byte cannot be carried: tmux's arguments are C strings, so one ends at \000. [Client.Command]
// refuses arguments that hold NUL.
//
// Quote only stops tmux's parser from reading anything into the argument. What the command then
// does with its arguments is its own business: it reads a leading '-' as a flag unless "--" came
// before, and some arguments are formats, which tmux expands (see [FormatLiteral]).
func Quote(arg string) string {
	var b strings.Builder
	b.Grow(len(arg) + 2)
	b.WriteByte('"')
	for i := 0; i < len(arg); i++ {
		c := arg[i]
		switch {
		case c == '"' || c == '\\' || c == '$' || c == '~':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == 0x1b:
			b.WriteString(`\e`)
		case c < 0x20 || c >= 0x7f:
			b.WriteByte('\\')
			b.WriteByte('0' + c>>6)
			b.WriteByte('0' + c>>3&7)
			b.WriteByte('0' + c&7)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// FormatLiteral escapes text for an argument that tmux expands as a format, so that the argument
// means the text itself. In a format, #(…) runs a shell command (as the server's user), #{…}
// reads a variable or an option (#{KRAD_ADE_TOKEN} would show a secret), and #S, #W, #H and the
// like are short names for them. "##" is a literal '#', so every '#' is doubled, except in a run
// of '#' that comes just before '[': tmux copies such a run and its '[' as they are (it is the
// start of a style, #[fg=red], left for drawing), so doubling it would add '#' characters.
// Nothing else is special: the result expands back to text exactly, control characters, '%' and
// invalid UTF-8 included.
//
// Which arguments are formats, found by experiment with tmux 3.3a (a name '#{pid}' comes out as
// the server's pid, and '#(touch f)' makes f):
//
//   - expanded: new-window -n and -c; new-session -s, -n and -c; rename-window and
//     rename-session; display-message's message; set-option -F and set-environment -F values;
//     the -F of list-windows, new-window -P and the like (the app's own formats, meant so).
//   - not expanded: a window's command (the arguments after "--", or the shell command),
//     new-window and new-session -e values, set-option and set-environment values without -F
//     (default-command among them), send-keys -l text, and targets (-t, -s): "-t '#{pane_id}'"
//     finds nothing.
//
// So text the app does not control (a title, a folder) reaches tmux through FormatLiteral in
// the first list, and as it is in the second. Quote is still needed on top, for tmux's command
// parser; [Client.Command] does that. A name tmux stores is not expanded again when it is read
// back with #{window_name}.
func FormatLiteral(text string) string {
	if strings.IndexByte(text, '#') < 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text) + 8)
	for i := 0; i < len(text); {
		if text[i] != '#' {
			b.WriteByte(text[i])
			i++
			continue
		}
		j := i
		for j < len(text) && text[j] == '#' {
			j++
		}
		b.WriteString(text[i:j])
		if j == len(text) || text[j] != '[' {
			b.WriteString(text[i:j])
		}
		i = j
	}
	return b.String()
}

// commandLine builds the line Command sends: each argument quoted, separated by spaces, ending in
// a newline. It refuses what would not give exactly one reply: no arguments (an empty line detaches
// the client), a name tmux would read as a variable assignment (which gives no reply at all), NUL
// (which would cut an argument short), and the commands in multiReply.
func commandLine(args []string) ([]byte, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("%w: no command name", ErrRefused)
	}
	if !validName(args[0]) {
		return nil, fmt.Errorf("%w: the first argument must be a command name (letters, digits and '-')", ErrRefused)
	}
	if multiReply(args[0]) {
		return nil, fmt.Errorf("%w: %s makes tmux run further commands, whose replies would go to the wrong callers", ErrRefused, args[0])
	}
	n := len(args)
	for i, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("%w: argument %d holds a NUL byte, which tmux cannot carry", ErrRefused, i)
		}
		n += len(a) + 2
	}
	line := make([]byte, 0, n)
	for i, a := range args {
		if i > 0 {
			line = append(line, ' ')
		}
		line = append(line, Quote(a)...)
	}
	return append(line, '\n'), nil
}

// validName reports whether name can be a command name or alias: ASCII letters, digits and '-',
// starting with a letter. This keeps out "NAME=VALUE", which tmux's parser takes for an
// assignment, quoted or not.
func validName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// multiReplyCommands are the tmux 3.3 commands, with their aliases, that break the one line, one
// reply order: if-shell, source-file and run-shell -C queue the commands they run after
// themselves, each with a reply of its own marked as ours (and run-shell without -C answers at
// once, its output going to a pane rather than the reply); confirm-before, command-prompt,
// display-menu, display-popup and display-panes wait for a person, holding every later command
// behind them.
var multiReplyCommands = map[string]string{
	"if-shell":       "if",
	"source-file":    "source",
	"run-shell":      "run",
	"confirm-before": "confirm",
	"command-prompt": "",
	"display-menu":   "menu",
	"display-popup":  "popup",
	"display-panes":  "displayp",
}

// multiReply reports whether tmux could take name for one of multiReplyCommands. tmux accepts an
// alias, a full name, or any prefix of a full name that names one command only; "display" is the
// alias of display-message, so it is the one prefix of these that tmux never reads as them.
func multiReply(name string) bool {
	if name == "display" {
		return false
	}
	for full, alias := range multiReplyCommands {
		if name == alias && alias != "" || strings.HasPrefix(full, name) {
			return true
		}
	}
	return false
}
