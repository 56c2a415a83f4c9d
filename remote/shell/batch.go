package shell

import (
	"io"
	"strconv"
	"strings"
)

// A Step is one [Script] of a [Batch], with its arguments ($1, $2, … in its body) and, for at
// most one step of a batch, the batch's standard input; the other steps read nothing (their
// stdin is /dev/null).
type Step struct {
	Script Script
	Args   []string
	Stdin  io.Reader
	// Folders are the folders under the home that the step enters (krad_enters, krad_enter),
	// each level named, as paths from the home: ".krad-ade", ".krad-ade/bin". The batch looks
	// at their modes first, with one stat for every step: those already owner-only are not
	// chmodded again (see [Batch.Command]).
	Folders []string
}

// A Batch is several scripts run one after another by one sh: one command, so one SSH exec and
// one login shell started on the host, in place of one for each. Each step runs in a subshell of
// its own, so that one that exits (krad_fail, krad_refuse, or its own exit) ends only itself and
// the next step still runs; each prints its own frame, so [Batch.Result] reads each step's
// report from the one stdout. The steps' frames must have different names. The batch exits
// with the status of its first step that did not exit 0.
//
// Running on when a step failed is what the steps of a connect want: each reports on its own,
// and the caller takes the first failure in its own order. A step that must not run after
// another failed belongs in the same script.
type Batch []Step

// script is the batch's script, on one line, and its arguments.
func (b Batch) script() (string, []string) {
	names := map[string]bool{}
	readers := 0
	var body strings.Builder
	var args []string
	body.WriteString(Prelude)
	body.WriteString(b.ownOnly())
	body.WriteString("krad_s=0;\n")
	for i, s := range b {
		s.Script.checkName()
		if names[s.Script.Name] {
			panic("shell: two steps of a batch have the name " + strconv.Quote(s.Script.Name))
		}
		names[s.Script.Name] = true
		if s.Stdin != nil {
			readers++
		}
		fn := "krad_step" + strconv.Itoa(i)
		// The function's body is a subshell: its exit, cd, umask, traps and variables stay in it.
		body.WriteString(fn + "() ( KRAD_BEGIN=" + s.Script.Begin() + "; KRAD_END=" + s.Script.End() + ";\n")
		body.WriteString(s.Script.Body)
		body.WriteString("\n);\n")
		body.WriteString(fn)
		for range s.Args {
			args = append(args, "")
			body.WriteString(` "${` + strconv.Itoa(len(args)) + `}"`)
		}
		copy(args[len(args)-len(s.Args):], s.Args)
		if s.Stdin == nil {
			body.WriteString(" </dev/null")
		}
		body.WriteString("; krad_r=$?; if [ $krad_s -eq 0 ]; then krad_s=$krad_r; fi;\n")
	}
	if readers > 1 {
		panic("shell: more than one step of a batch reads stdin")
	}
	body.WriteString("exit $krad_s;\n")
	return oneLine(body.String()), args
}

// Command is the command line that runs the batch under sh: one line, like [Script.Command],
// with every step's arguments quoted. Before the steps, one stat looks at the folders they
// enter ([Step.Folders]): when every one is a folder of mode 0700 already, no step chmods them.
// It panics on a batch it cannot run as one: two steps of the same name, or two that read stdin.
func (b Batch) Command() string {
	return command(b.script())
}

// Subshell is the batch as one line for a POSIX sh that is already running (the connect's sh
// on a host), in a subshell of it, with the steps' arguments set as $1, $2, …: the same script
// as [Batch.Command], without the exec of a new sh (on a host, its dynamic loading is most of a
// millisecond of CPU). It panics as Command does.
func (b Batch) Subshell() string {
	script, args := b.script()
	checkBackslash(script)
	var c strings.Builder
	c.WriteString("( set --")
	for _, a := range args {
		c.WriteString(" " + Quote(a))
	}
	c.WriteString("; " + script + " )")
	return c.String()
}

// ownOnly is the batch's look at its steps' folders: one stat, where each step's krad_enters
// would start a chmod. KRAD_OWNONLY lists them (as "~/.krad-ade/bin", the steps' names for them)
// when every one is a folder of mode 0700 (stat's %f, the raw mode in hex, is 41c0: type and
// permission bits, in no language of the locale's, where %F names the type in it). Any other
// answer (one missing, loose, a symbolic link, a stat without -c) leaves it empty, and each
// step makes its folders owner-only as it would alone. Their owner is not looked at here: krad_into refuses a
// folder of another user's either way, and only the owner can change a folder's mode after the
// stat.
func (b Batch) ownOnly() string {
	var folders []string
	seen := map[string]bool{}
	for _, s := range b {
		for _, f := range s.Folders {
			if !seen[f] {
				seen[f] = true
				folders = append(folders, f)
			}
		}
	}
	if len(folders) == 0 {
		return "KRAD_OWNONLY=;\n"
	}
	var paths, want, shown strings.Builder
	for _, f := range folders {
		paths.WriteString(" " + Quote(f))
		want.WriteString(" 41c0")
		shown.WriteString(" ~/" + f)
	}
	return "KRAD_OWNONLY=; krad_m=$(cd -P \"$HOME\" 2>/dev/null && stat -c %f --" + paths.String() + " 2>/dev/null) && krad_words $krad_m && " +
		"[ \"$krad_w\" = " + Quote(strings.TrimPrefix(want.String(), " ")) + " ] && KRAD_OWNONLY=" + Quote(strings.TrimPrefix(shown.String(), " ")) + ";\n"
}

// Stdin is what the batch's command reads: the stdin of the one step that has one, else nil.
func (b Batch) Stdin() io.Reader {
	for _, s := range b {
		if s.Stdin != nil {
			return s.Stdin
		}
	}
	return nil
}

// Result reads step i's report from the batch's stdout, as [Script.Result] does for a script run
// alone. runErr is the batch's: it is passed on only for a step that did not report success,
// whose failure its stderr may explain (the stderr is the whole batch's).
func (b Batch) Result(i int, stdout []byte, runErr error) ([]string, error) {
	s := b[i].Script
	if lines, err := s.Frame(stdout); err == nil && len(lines) > 0 && lines[0] == "ok" {
		runErr = nil
	}
	return s.Result(stdout, runErr)
}
