package sshconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/krad-ade/krad/internal/termsafe"
)

// This file reads the files: lines split as readconf.c's process_config_line splits them, and
// the evaluation of Host, Match and Include (see the package documentation).

// Warning is a line of an ssh_config file that the package could not read and left out; the
// rest of the file still counts. Callers log it.
type Warning struct {
	File   string
	Line   int // 1-based; 0 when the whole file was left out
	Reason string
}

func (w Warning) String() string {
	if w.Line == 0 {
		return fmt.Sprintf("%s: skipped: %s", w.File, w.Reason)
	}
	return fmt.Sprintf("%s:%d: skipped: %s", w.File, w.Line, w.Reason)
}

// ConfigError is a setting that cannot be acted on: a bad value in ssh_config (or a known_hosts
// file it names that cannot be read), a malformed host, a Match exec token the shell would read
// as more than text. Retrying cannot fix it; an edit of the files can.
type ConfigError struct {
	// Host is the host whose settings are wrong, Key the setting ("Port"), Reason what is wrong.
	Host, Key, Reason string
}

func (e *ConfigError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("ssh config for %s: %s", e.Host, e.Reason)
	}
	return fmt.Sprintf("ssh config for %s: %s: %s", e.Host, e.Key, e.Reason)
}

// sshLine is one line of an ssh_config file that says something.
type sshLine struct {
	n    int      // 1-based
	key  string   // the keyword, lower-case
	args []string // the arguments, split as ssh splits them
	rest string   // the text after the keyword: a ProxyCommand's, ProxyJump's or Match's own
	err  string   // why ssh refuses the line; "" when it reads
}

// sshFile is a parsed ssh_config file.
type sshFile struct {
	path  string
	lines []sshLine
}

// ws is ssh's white space in config lines.
const ws = " \t\r\n"

// singleArg are the keywords this package reads that take exactly one argument; ssh refuses
// more.
var singleArg = map[string]bool{
	"hostname": true, "port": true, "user": true, "identityfile": true, "identitiesonly": true,
	"identityagent": true, "hostkeyalias": true, "stricthostkeychecking": true,
	"hashknownhosts": true, "connecttimeout": true, "serveraliveinterval": true,
	"serveralivecountmax": true, "canonicalizehostname": true,
}

// parseSSHConfig splits data, the contents of the ssh_config file path, into lines as ssh does.
// A line ssh would refuse is kept with its err set: the evaluation warns about it and leaves it
// out.
func parseSSHConfig(path string, data []byte) *sshFile {
	f := &sshFile{path: path}
	for i, raw := range bytes.Split(data, []byte("\n")) {
		if ln, ok := parseSSHLine(string(raw)); ok {
			ln.n = i + 1
			f.lines = append(f.lines, ln)
		}
	}
	return f
}

// parseSSHLine splits one line as readconf.c's process_config_line does. ok is false for a
// line that says nothing: blank, a comment, or a keyword ssh cannot read and skips.
func parseSSHLine(line string) (ln sshLine, ok bool) {
	line = strings.TrimRight(line, ws+"\f")
	if strings.IndexByte(line, 0) >= 0 {
		return sshLine{key: "?", err: "the line holds a NUL byte"}, true
	}
	key, rest, more, good := strdelim(line)
	if !good {
		return sshLine{}, false
	}
	if key == "" && more {
		// Leading white space: the keyword comes after it.
		if key, rest, more, good = strdelim(rest); !good {
			return sshLine{}, false
		}
	}
	if key == "" || key[0] == '#' {
		return sshLine{}, false
	}
	ln.key = strings.ToLower(key)
	if more {
		rest = strings.TrimLeft(rest, ws)
	}
	if !more || rest == "" {
		ln.err = fmt.Sprintf("no argument after keyword %s", termsafe.Quote(key))
		return ln, true
	}
	ln.rest = rest
	args, err := argvSplit(rest)
	if err != nil {
		ln.err = err.Error()
		return ln, true
	}
	ln.args = args
	switch {
	case singleArg[ln.key] && len(args) == 0:
		ln.err = fmt.Sprintf("keyword %s has no argument", termsafe.Quote(key))
	case singleArg[ln.key] && len(args) > 1:
		ln.err = fmt.Sprintf("keyword %s has extra arguments at the end of the line", termsafe.Quote(key))
	case ln.key == "userknownhostsfile" || ln.key == "globalknownhostsfile":
		for i, a := range args {
			if a == "" {
				ln.err = fmt.Sprintf("keyword %s has an empty argument", termsafe.Quote(key))
			} else if strings.EqualFold(a, None) && (i > 0 || len(args) > 1) {
				ln.err = fmt.Sprintf("keyword %s: \"none\" must appear alone", termsafe.Quote(key))
			}
		}
	case ln.key == "host":
		if slices.Contains(args, "") {
			ln.err = "Host has an empty pattern"
		}
	case ln.key == "proxyjump" && (len(args) == 0 || args[0] == ""):
		ln.err = "ProxyJump has no argument"
	}
	return ln, true
}

// strdelim is OpenSSH's strdelim: the next token of s and what follows it, split at white space
// or a single '=' (with the white space around them), or a token in double quotes. more is
// false when s held no delimiter, so that tok is all of it; good is false for a quote that is
// not closed.
func strdelim(s string) (tok, rest string, more, good bool) {
	i := strings.IndexAny(s, ws+"\"=")
	if i < 0 {
		return s, "", false, true
	}
	if s[i] == '"' {
		t := s[:i] + s[i+1:]
		j := strings.IndexByte(t[i:], '"')
		if j < 0 {
			return "", "", false, false
		}
		j += i
		return t[:j], strings.TrimLeft(t[j+1:], ws), true, true
	}
	equals := s[i] == '='
	tok, rest = s[:i], strings.TrimLeft(s[i+1:], ws)
	if !equals && strings.HasPrefix(rest, "=") {
		rest = strings.TrimLeft(rest[1:], ws)
	}
	return tok, rest, true, true
}

// argvSplit is OpenSSH's argv_split with comments: arguments split at spaces and tabs, in single
// or double quotes, with \' \" \\ and (outside quotes) "\ " for the character itself; a '#'
// where an argument would start ends the line.
func argvSplit(s string) ([]string, error) {
	var args []string
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '\t' {
			continue
		}
		if s[i] == '#' {
			break
		}
		var b strings.Builder
		var quote byte
		for ; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '\\' && i+1 < len(s) && (s[i+1] == '\'' || s[i+1] == '"' || s[i+1] == '\\' || (quote == 0 && s[i+1] == ' ')):
				i++
				b.WriteByte(s[i])
				continue
			case quote == 0 && (c == ' ' || c == '\t'):
			case quote == 0 && (c == '"' || c == '\''):
				quote = c
				continue
			case quote != 0 && c == quote:
				quote = 0
				continue
			default:
				b.WriteByte(c)
				continue
			}
			break
		}
		if quote != 0 {
			return nil, errors.New("a quote is not closed")
		}
		args = append(args, b.String())
	}
	return args, nil
}

// sshOptions are what the files gave for one host, as ssh keeps them: the first value of a
// keyword wins; IdentityFile's values add up.
type sshOptions struct {
	vals          map[string][]string // keyword → the arguments of the line that set it
	identityFiles []string
	// proxyCommand and jump are set at most once each, as ssh sets them: whichever comes first
	// wins, except that ProxyJump none lets a later ProxyCommand in.
	proxyCommand, jump string
	proxySet, jumpSet  bool
}

// get returns the first argument of the keyword's value, or "".
func (o *sshOptions) get(key string) string {
	if v := o.vals[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// set takes in an active line's value, unless the keyword has one.
func (o *sshOptions) set(ln sshLine) {
	switch ln.key {
	case "identityfile":
		if !slices.Contains(o.identityFiles, ln.args[0]) {
			o.identityFiles = append(o.identityFiles, ln.args[0])
		}
	case "proxycommand":
		// ProxyJump none, unlike a ProxyJump host, leaves room for a ProxyCommand (ssh -G
		// says so).
		if (!o.jumpSet || o.jump == None) && !o.proxySet {
			o.proxyCommand, o.proxySet = strings.TrimLeft(ln.rest, ws+"="), true
		}
	case "proxyjump":
		if o.jumpSet || o.proxySet {
			return
		}
		v := strings.TrimLeft(ln.rest, ws+"=")
		if strings.EqualFold(v, None) {
			o.jump, o.jumpSet = None, true
			return
		}
		v, _, _ = strings.Cut(v, "#")
		o.jump, o.jumpSet = strings.TrimRight(v, ws), true
	default:
		if _, ok := o.vals[ln.key]; !ok {
			o.vals[ln.key] = ln.args
		}
	}
}

// sshEval evaluates the config files for one destination.
type sshEval struct {
	r        *resolver
	files    []string // the files, in the order ssh reads them
	original string   // the host as given: Host lines' and Match originalhost's, %n
	host     string   // Host lines match this: the host as given, the final host name in the final pass
	final    bool     // the second pass
	want     bool     // a Match asked for the final pass
	o        sshOptions
	parsed   map[string]*sshFile
	warned   map[[2]any]bool
	warnings []Warning
	err      error // the first error that stops the evaluation (a Match exec that failed)
}

// maxIncludeDepth is how deep Include may nest, as in ssh.
const maxIncludeDepth = 16

// evaluate reads the files for the host given as alias, with a user and port from the command
// line (empty and 0 when not given) and, for the hops after the first of a ProxyJump list, a
// jump of their own (ssh -J), which keeps their ProxyJump and ProxyCommand out. It returns the
// options and the final host name, lower-case, with its %h expanded.
func (r *resolver) evaluate(alias, user string, port int, jumped bool) (*sshOptions, string, []Warning, error) {
	ev := &sshEval{r: r, files: r.files, original: alias, host: alias,
		o:      sshOptions{vals: map[string][]string{}},
		parsed: map[string]*sshFile{}, warned: map[[2]any]bool{}}
	if user != "" {
		ev.o.vals["user"] = []string{user}
	}
	if port != 0 {
		ev.o.vals["port"] = []string{fmt.Sprint(port)}
	}
	if jumped {
		ev.o.jump, ev.o.jumpSet = "(command line)", true
	}
	ev.pass()
	if ev.err != nil {
		return nil, "", ev.warnings, ev.err
	}
	host := alias
	if v := ev.o.get("hostname"); v != "" {
		name, err := expandTokens(v, map[byte]string{'h': alias})
		if err != nil {
			return nil, "", ev.warnings, &ConfigError{Host: alias, Key: "HostName", Reason: err.Error()}
		}
		host = name
	}
	if _, err := netip.ParseAddr(host); err != nil {
		host = strings.ToLower(host)
	}
	if canon := strings.ToLower(ev.o.get("canonicalizehostname")); ev.want || (canon != "" && canon != "no" && canon != "false") {
		// The second pass, with the host name as the first one left it: Host lines and
		// Match host now match it, and Match final and canonical apply.
		ev.o.vals["hostname"] = []string{host}
		ev.host, ev.final = host, true
		ev.pass()
		if ev.err != nil {
			return nil, "", ev.warnings, ev.err
		}
	}
	return &ev.o, host, ev.warnings, nil
}

// pass reads every file once.
func (ev *sshEval) pass() {
	for i, path := range ev.files {
		active := true
		ev.read(path, i == 0, 0, false, &active)
	}
}

func (ev *sshEval) warn(file string, line int, reason string) {
	k := [2]any{file, line}
	if ev.warned[k] {
		return
	}
	ev.warned[k] = true
	ev.warnings = append(ev.warnings, Warning{File: file, Line: line, Reason: reason})
}

// load returns the file at path parsed, nil when it does not exist or cannot be read (with a
// warning).
func (ev *sshEval) load(path string, included bool) *sshFile {
	if f, ok := ev.parsed[path]; ok {
		return f
	}
	ev.parsed[path] = nil
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		ev.warn(path, 0, fmt.Sprintf("cannot read it: %v", err))
		return nil
	}
	if included {
		// ssh refuses an included file that another user owns or that others can write.
		if fi, err := os.Stat(path); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && ((st.Uid != 0 && int(st.Uid) != os.Getuid()) || fi.Mode().Perm()&0o022 != 0) {
				ev.warn(path, 0, "bad owner or permissions: it must be yours and writable by you only, as ssh requires")
				return nil
			}
		}
	}
	f := parseSSHConfig(path, data)
	ev.parsed[path] = f
	return f
}

// read evaluates the file at path. user says whether it is the user's file (or one it
// includes), where relative Include paths are taken from ~/.ssh rather than /etc/ssh;
// neverMatch that its Host and Match lines match nothing (it was included from a block that
// does not apply). active is whether the lines apply, and is left as the file leaves it.
func (ev *sshEval) read(path string, user bool, depth int, neverMatch bool, active *bool) {
	f := ev.load(path, depth > 0)
	if f == nil {
		return
	}
	for _, ln := range f.lines {
		if ev.err != nil {
			return
		}
		if ln.err != "" {
			reason := ln.err
			if ln.key == "host" || ln.key == "match" {
				*active = false
				reason += "; the lines under it apply to no host"
			}
			ev.warn(path, ln.n, reason)
			continue
		}
		switch ln.key {
		case "host":
			*active = !neverMatch && ev.hostMatches(ln.args)
		case "match":
			m, err := ev.match(path, ln)
			if err != nil {
				ev.warn(path, ln.n, err.Error()+"; the lines under it apply to no host")
				m = false
			}
			*active = m && !neverMatch
		case "include":
			ev.include(path, ln, user, depth, neverMatch || !*active, active)
		default:
			if *active {
				ev.o.set(ln)
			}
		}
	}
}

// include reads the files an Include line names, in place: each glob's matches in order, taken
// from ~/.ssh (or /etc/ssh for the system's file) when relative.
func (ev *sshEval) include(path string, ln sshLine, user bool, depth int, neverMatch bool, active *bool) {
	if depth+1 > maxIncludeDepth {
		ev.warn(path, ln.n, "Include nests too deep")
		return
	}
	for _, arg := range ln.args {
		if arg == "" {
			continue
		}
		if strings.HasPrefix(arg, "~") && !user {
			ev.warn(path, ln.n, "Include with ~ is for the user's file only")
			continue
		}
		switch {
		case strings.HasPrefix(arg, "~"):
			arg = expandTilde(arg, ev.r.home)
		case !filepath.IsAbs(arg) && user:
			arg = filepath.Join(ev.r.home, ".ssh", arg)
		case !filepath.IsAbs(arg):
			arg = filepath.Join("/etc/ssh", arg)
		}
		matches, err := filepath.Glob(arg)
		if err != nil {
			ev.warn(path, ln.n, fmt.Sprintf("Include %s: %v", termsafe.Quote(arg), err))
			continue
		}
		was := *active
		for _, m := range matches {
			ev.read(m, user, depth+1, neverMatch, active)
			// A Match in an included file does not change the including file's state.
			*active = was
		}
	}
}

// hostMatches evaluates a Host line's patterns against the host: it applies when one pattern
// matches and no negated one does. Patterns are matched as they are written, case and all.
func (ev *sshEval) hostMatches(patterns []string) bool {
	matched := false
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		if neg {
			p = p[1:]
		}
		if sshMatchPattern(ev.host, p) {
			if neg {
				return false
			}
			matched = true
		}
	}
	return matched
}

// match evaluates a Match line as ssh's match_cfg_line does: every criterion must hold, in
// order; an exec runs only when the criteria before it held. An error is a line ssh refuses,
// or a Match exec that could not run.
func (ev *sshEval) match(path string, ln sshLine) (bool, error) {
	// The host the criteria see: the HostName given so far, with its %h, else the host.
	host := ev.host
	if !ev.final {
		if v := ev.o.get("hostname"); v != "" {
			h, err := expandTokens(v, map[byte]string{'h': ev.host})
			if err != nil {
				return false, fmt.Errorf("Match: HostName %s: %w", termsafe.Quote(v), err)
			}
			host = h
		}
	}
	user := ev.o.get("user")
	if user == "" {
		user = ev.r.localUser
	}
	result, attributes := true, 0
	cond := ln.rest
	for {
		attrib, rest, more, good := strdelim(cond)
		if !good {
			return false, errors.New("Match: a quote is not closed")
		}
		if attrib == "" || attrib[0] == '#' {
			break
		}
		cond = ""
		if more {
			cond = rest
		}
		neg := attrib[0] == '!'
		if neg {
			attrib = attrib[1:]
		}
		name := strings.ToLower(attrib)
		if name == "all" {
			next, _, _, _ := strdelim(cond)
			if attributes > 1 || (cond != "" && next != "" && next[0] != '#') {
				return false, errors.New("Match: all cannot be combined with other criteria")
			}
			return result && !neg, nil
		}
		attributes++
		if name == "canonical" || name == "final" {
			if name == "final" {
				ev.want = true
			}
			if ev.final == neg {
				result = false
			}
			continue
		}
		if cond == "" {
			return false, fmt.Errorf("Match: %s needs an argument", termsafe.Quote(attrib))
		}
		arg, rest, more, good := strdelim(cond)
		if !good {
			return false, errors.New("Match: a quote is not closed")
		}
		if arg == "" || arg[0] == '#' {
			return false, fmt.Errorf("Match: %s needs an argument", termsafe.Quote(attrib))
		}
		cond = ""
		if more {
			cond = rest
		}
		var r bool
		switch name {
		case "host":
			r = sshMatchList(strings.ToLower(host), arg, true) == 1
		case "originalhost":
			r = sshMatchList(strings.ToLower(ev.original), arg, true) == 1
		case "user":
			r = sshMatchList(user, arg, false) == 1
		case "localuser":
			r = sshMatchList(ev.r.localUser, arg, false) == 1
		case "exec":
			if !result {
				continue // ssh runs no command once the line cannot match
			}
			ok, err := ev.exec(arg, host, user)
			if err != nil {
				ev.err = fmt.Errorf("ssh config %s line %d: %w", path, ln.n, err)
				return false, nil
			}
			r = ok
		default:
			return false, fmt.Errorf("Match: unsupported criterion %s", termsafe.Quote(attrib))
		}
		if r == neg {
			result = false
		}
	}
	if attributes == 0 {
		return false, errors.New("Match needs one or more criteria")
	}
	return result, nil
}

// sshMatchList is OpenSSH's match_pattern_list: s against a comma-separated list of patterns,
// each negated by a leading '!'. It is 1 when a pattern matches and no negated one does, -1 when
// a negated one does, else 0. lower matches the patterns in lower case.
func sshMatchList(s, list string, lower bool) int {
	got := 0
	for _, p := range strings.Split(list, ",") {
		neg := strings.HasPrefix(p, "!")
		if neg {
			p = p[1:]
		}
		if lower {
			p = strings.ToLower(p)
		}
		if sshMatchPattern(s, p) {
			if neg {
				return -1
			}
			got = 1
		}
	}
	return got
}

// sshMatchPattern is OpenSSH's match_pattern: '*' stands for any text, empty too, '?' for one
// byte, and the rest for itself, case and all. It takes time len(s)·len(p) at most.
func sshMatchPattern(s, p string) bool {
	si, pi := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			si++
			pi++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
