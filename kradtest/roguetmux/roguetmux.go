// Package roguetmux writes, for tests, a program named tmux that stands for the tmux of a
// compromised host: a shell script that speaks tmux's control mode (it answers every command line
// with a %begin/%end block, as tmux does) but says what the test tells it to — windows with
// forged options, unreadable lines, and floods of notifications. A test puts it first on the PATH
// of the host's user (the sessions of a real sshd, package sshdtest), so that the app reaches it
// the way it reaches any host's tmux: over SSH, through `exec tmux -C …`.
//
// The script keeps no windows. It answers:
//
//   - the new-session of its command line with an empty block of its own (flags 0), as tmux does,
//     or with Options.Refuse in a failed one, after which it exits; or, when Options.Stderr is
//     set, with nothing: it writes that to stderr and exits at once; with Options.Silent,
//     nothing after that block, whatever it reads;
//   - list-windows with Options.Windows when the format asks for @krad (the app's adoption), with
//     the output of Options.Listed when it asks for windows' indexes or names but not @krad (the
//     app's listing of where windows are), and with nothing otherwise;
//   - show-options with Options.Next;
//   - display-message -t @N with "%N 0 <name>" (a pane, no holder), or with Options.DisplayError
//     as a failed command when it is set; display-message -t %N with a pane that lives;
//   - new-window with a new "@N %N";
//   - every other command with an empty block.
//
// Once it has answered the kill-window that closes the holder (the app's last step before the
// environment is up), it runs Options.Flood, whose output goes into the stream, and then creates
// the file Flooded names.
package roguetmux

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Options say what the rogue tmux sends.
type Options struct {
	// Windows are the lines of adoption's list-windows answer.
	Windows []string
	// Next is the answer to show-options (the session's @krad_next); "" answers nothing.
	Next string
	// DisplayError, when set, is the line of a failed display-message.
	DisplayError string
	// Flood is a shell command whose output the script sends once the environment is up, such
	// as WindowAdds.
	Flood string
	// Refuse, when set, is the line of a failed reply to the new-session of the command line, after
	// which the script exits, as tmux does when it cannot start.
	Refuse string
	// Listed is a shell command whose output answers the list-windows that asks for windows'
	// indexes or names but not @krad (where the session's windows are, for numbering and moving
	// them), such as WindowList.
	Listed string
	// Stderr, when set, is what the script writes to stderr before it exits, at once and with
	// nothing on stdout, as a tmux that cannot start does (a usage message, a missing library).
	Stderr string
	// Silent makes the script answer the new-session of its command line and then nothing at
	// all, as a host's broken or compromised tmux might: it reads what the app sends and drops it.
	Silent bool
}

// Tmux is a rogue tmux written by Write.
type Tmux struct {
	// Bin is the folder that holds the program tmux: put it first on PATH.
	Bin string
	// Flooded is created once the flood has been written to the stream.
	Flooded string
	// Commands logs every command line the script read, one a line.
	Commands string
}

// Write writes the script into dir/bin/tmux, with the files it reads beside it in dir.
func Write(t testing.TB, dir string, o Options) *Tmux {
	t.Helper()
	rt := &Tmux{Bin: filepath.Join(dir, "bin"), Flooded: filepath.Join(dir, "flooded"), Commands: filepath.Join(dir, "commands")}
	if err := os.MkdirAll(rt.Bin, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"windows": strings.Join(o.Windows, "\n"),
		"next":    o.Next,
		"flood":   o.Flood,
		"listed":  o.Listed,
		"refuse":  o.Refuse,
		"derror":  o.DisplayError,
		"stderr":  o.Stderr,
	}
	if o.Silent {
		files["silent"] = "1"
	}
	for name, data := range files {
		if data != "" && !strings.HasSuffix(data, "\n") {
			data += "\n"
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := strings.ReplaceAll(scriptTemplate, "@DIR@", dir)
	if err := os.WriteFile(filepath.Join(rt.Bin, "tmux"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return rt
}

// WindowList is a Listed of windows @first to @first+n-1, each at the window index of its id and
// none of them the holder: lines of "@ID INDEX 0", as the app asks for them.
func WindowList(first, n int) string {
	return fmt.Sprintf(`awk 'BEGIN { for (i = 0; i < %d; i++) printf "@%%d %%d 0\n", %d + i, %d + i }'`, n, first, first)
}

// WindowAdds is a Flood of n %window-add lines, for windows @first to @first+n-1.
func WindowAdds(first, n int) string {
	return fmt.Sprintf(`awk 'BEGIN { for (i = 0; i < %d; i++) printf "%%%%window-add @%%d\n", %d + i }'`, n, first)
}

// The script. Command lines come as the tmux package writes them: the name and each argument in
// double quotes.
const scriptTemplate = `#!/bin/sh
d='@DIR@'
n=0
block() { # block OUTCOME [FILE]: one reply, its lines from FILE
	n=$((n + 1))
	printf '%%begin 1 %d 1\n' "$n"
	if [ -n "$2" ]; then cat "$2"; fi
	printf '%%%s 1 %d 1\n' "$1" "$n"
}
if [ -s "$d/stderr" ]; then
	cat "$d/stderr" >&2
	exit 1
fi
if [ -s "$d/refuse" ]; then
	printf '%%begin 1 0 0\n'
	cat "$d/refuse"
	printf '%%error 1 0 0\n'
	exit 1
fi
printf '%%begin 1 0 0\n%%end 1 0 0\n'
if [ -s "$d/silent" ]; then exec cat >/dev/null; fi
id=100000
flooded=
while IFS= read -r line; do
	printf '%s\n' "$line" >>"$d/commands"
	case $line in
	'"list-windows"'*@krad*) block end "$d/windows" ;;
	'"list-windows"'*window_index*|'"list-windows"'*window_name*)
		if [ -s "$d/listed" ]; then sh "$d/listed" >"$d/answer"; else : >"$d/answer"; fi
		block end "$d/answer" ;;
	'"show-options"'*) block end "$d/next" ;;
	'"display-message"'*'"-t" "@'*)
		if [ -s "$d/derror" ]; then
			block error "$d/derror"
		else
			w=${line#*'"-t" "@'}
			w=${w%%'"'*}
			printf '%%%s 0 window %s\n' "$w" "$w" >"$d/answer"
			block end "$d/answer"
		fi ;;
	'"display-message"'*'"-t" "%'*) # a pane: alive
		printf '0  \n' >"$d/answer"
		block end "$d/answer" ;;
	'"new-window"'*)
		id=$((id + 1))
		printf '@%d %%%d\n' "$id" "$id" >"$d/answer"
		block end "$d/answer" ;;
	'"kill-window"'*)
		block end
		if [ -z "$flooded" ] && [ -s "$d/flood" ]; then
			flooded=1
			sh "$d/flood"
			: >"$d/flooded"
		fi ;;
	*) block end ;;
	esac
done
`
