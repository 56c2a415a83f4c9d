// Package config reads config.toml, the settings of the krad-ade app, and watches it for changes.
//
// The file lives beside api.json, in the folder discovery.Dir names. The app runs fine without
// one: a missing file means [Default]. Its settings:
//
//	# Let other programs find the agents API (api.json). On by default.
//	discovery = false
//	# Desktop notifications when an agent needs you, or a variant set ends. On by default.
//	notify = false
//	# How long an agent that never reports its state prints nothing before it is idle.
//	quiet = "2s"
//	# Agent profiles, which krad spawn --agent and a [[terminal]]'s agent name; see [Agent].
//	[[agent]]
//	name = "claude"
//	command = "claude"
//	kind = "claude"
//	# Terminals the app opens when it starts; see [Terminal].
//	[[terminal]]
//	title = "lead"
//	agent = "claude"
//	lead = true
//	# SSH environments; see [Environment].
//	[[environment]]
//	name = "build"
//	ssh = "buildbox"
//	# What new groups' checkouts get; see [Setup].
//	[[setup]]
//	path = "~/src/app"
//	include = [".env"]
//	# The person's MCP servers, lent to agents; see [Extension].
//	[[extension]]
//	name = "tracker"
//	command = ["tracker-mcp", "--stdio"]
//
// Only discovery and notify take effect while the app runs; the others are read when it starts.
//
// # Strictness
//
// A key the app does not know is an error, not something to skip: a typo such as "discovry =
// false" must not silently leave discovery on. Errors are [*Error] values that name the line,
// "config.toml line 3: unknown key \"discovry\"". Key names are matched exactly, case included.
//
// # Changes while the app runs
//
// [WatchAll] polls the file and reloads it on demand (the app does so on SIGHUP). A broken file
// changes nothing: the app keeps its last good settings and reports the error once.
//
// # Security model
//
// The file holds commands the app runs as the user ([[terminal]], [[agent]], [[setup]] and
// [[extension]] command), so whoever can write it
// can run code as the user. Before reading a byte, [Load] and [WatchAll] check it as OpenSSH's
// StrictModes checks ~/.ssh ([CheckFolder]): the config folder and config.toml must be the user's
// own and writable by no one else (group or other write bits are refused; readable is fine, the
// file holds no secret), config.toml a regular file, and every folder above them the user's or
// root's and not writable by others unless sticky. config.toml may be a symlink (dotfiles): the
// file it leads to, and the folders above that, pass the same checks. What fails is a
// [*ModeError] with the command that fixes it (chmod go-w …), and nothing is read. On Windows only
// the kinds of file are checked.
//
// The checks guard against other users, not against root or the user's own programs; a folder
// that passes cannot be changed by anyone else between the check and the read. Errors quote at
// most a key name, shortened, and the TOML library's message, with anything unprintable replaced.
package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/BurntSushi/toml"

	"github.com/krad-ade/krad/agenthooks"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/filestate"
	"github.com/krad-ade/krad/internal/termsafe"
)

// FileName is the name of the config file in the app's config folder.
const FileName = "config.toml"

// DefaultInterval is how often [WatchAll] polls when it is given no interval: often enough that a
// change is noticed within a second.
const DefaultInterval = 500 * time.Millisecond

// maxSize bounds what Load reads; a real file is a few KiB at most.
const maxSize = 1 << 20

// Config is the app's settings. Its zero value is not the default: use [Default].
//
// Later settings (quiet = "2s", [[terminal]] and [[environment]] tables) become fields here and
// cases in Parse.
type Config struct {
	// Discovery is "Let other programs find the agents API": whether the app writes api.json.
	// Key "discovery", default true.
	Discovery bool
	// Notify is whether the UI sends a desktop notification when an agent comes to need the
	// person or a variant set ends (the UI says so on its screen either way). Key "notify",
	// default true; it takes effect while the app runs.
	Notify bool
	// Quiet is how long an agent that never reported its state prints nothing before it counts
	// as idle. Key "quiet", a duration such as "2s"; default 2 s.
	Quiet time.Duration
	// Worktrees is the folder where this computer's groups are checked out (they can be large):
	// key "worktrees", an absolute path or one that starts with ~/; "" is the app's default,
	// $XDG_DATA_HOME/krad-ade/worktrees. Read when the app starts.
	Worktrees string
	// Terminals are the terminals the app opens when it starts: [[terminal]] tables.
	Terminals []Terminal
	// Environments are the SSH environments: [[environment]] tables.
	Environments []Environment
	// Agents are the agent profiles: [[agent]] tables, by the order of the file.
	Agents []Agent
	// Extensions are the person's MCP servers that agents may use: [[extension]] tables.
	Extensions []Extension
	// Editor is how Code opens a file: [editor] command and ssh_command, each an argv whose
	// words may hold {file}, {line} and (ssh_command) {host}. None: Code is unavailable.
	Editor Editor
	// Setups say what new groups' checkouts get: [[setup]] tables, by the order of the file.
	Setups []Setup
	// SSHAskpass: [git] ssh_askpass = true also sends ssh's prompts (SSH_ASKPASS) to the app.
	// Off by default: overriding SSH_ASKPASS broke users' own askpass in other tools.
	SSHAskpass bool
}

// Extension is one [[extension]] table: an MCP server (stdio) that the app runs on this computer
// for the ExtensionTool request and `krad tool`.
//
//	[[extension]]
//	name = "tracker"                        # 1 to 40 of a-z, 0-9, - and _
//	command = ["tracker-mcp", "--stdio"]    # its argv, run without a shell
//	env = { TRACKER_PROFILE = "work" }      # added to the app's environment
//	environments = ["main", "build"]        # who may use it: none means main only; "*" all
type Extension struct {
	Name         string
	Command      []string
	Env          map[string]string
	Environments []string
}

// Editor is the [editor] table.
//
//	[editor]
//	command = ["code", "--wait", "--goto", "{file}:{line}"]
//	ssh_command = ["code", "--wait", "--remote", "ssh-remote+{host}", "--goto", "{file}:{line}"]
type Editor struct {
	Command    []string
	SSHCommand []string
}

// Environment is one [[environment]] table: terminals on an SSH host.
//
//	[[environment]]
//	name = "build"             # the environment's name: E in E:N
//	ssh = "buildbox"           # a Host of ~/.ssh/config (ProxyJump and all), or user@host:port
//	dir = "~/src/app"          # the terminals' working folder on the host
type Environment struct {
	Name string
	SSH  string
	Dir  string
}

// Agent is one [[agent]] table: an agent profile, which Spawn's agent and RunVariants name.
//
//	[[agent]]
//	name = "claude"            # what Spawn {agent} names: 1 to 40 of a-z, 0-9, - and _
//	command = "claude"         # a shell command line
//	prompt = "typed"           # how it takes a prompt: "typed" in once it is ready (default), or
//	                           # as its last "argument" (which ps shows to every user of the host)
//	kind = "claude"            # the agent's CLI, when krad knows it: claude, codex or gemini
type Agent struct {
	Name    string
	Command string
	// PromptArg: the prompt is the command's last argument, rather than typed in.
	PromptArg bool
	// Kind is the agent's CLI, "claude", "codex" or "gemini" (agenthooks.Kinds), which the app
	// starts with the hooks by which it tells its own state; "" for another command.
	Kind string
}

// Terminal is one [[terminal]] table: a terminal the app opens when it starts.
//
//	[[terminal]]
//	title = "claude"           # one line of text, no control characters; none means the program's name
//	command = "claude"         # a shell command line; none means your shell
//	agent = "claude"           # or an [[agent]]'s name: its command, with its kind's hooks
//	dir = "~/src/app"          # working folder; none means the app's
//	lead = true                # the lead of a new session
//	environment = "main"       # main (this computer, the default) or an [[environment]]'s name
type Terminal struct {
	Title   string
	Command string
	// Agent names an [[agent]] profile, whose command the terminal runs as krad spawn --agent
	// runs it (with its kind's hooks, so that it tells its own state); "" for Command. Not both.
	Agent       string
	Dir         string
	Lead        bool
	Environment string
}

// Bounds of quiet.
const (
	minQuiet = 100 * time.Millisecond
	maxQuiet = time.Hour
)

// Default is the settings of an app without a config file.
func Default() Config {
	return Config{Discovery: true, Notify: true, Quiet: 2 * time.Second}
}

// Error is a problem with config.toml. Line is where it is, counting from 1, or 0 when it is not
// on one line (the file could not be read, or it is not UTF-8).
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s line %d: %s", FileName, e.Line, e.Msg)
	}
	return FileName + ": " + e.Msg
}

// Parse reads the settings in data, a config.toml. Settings it does not name keep their defaults.
// Every error is an [*Error].
func Parse(data []byte) (Config, error) {
	var top map[string]toml.Primitive
	md, err := toml.Decode(string(data), &top)
	if err != nil {
		return Config{}, fromTOML(data, err)
	}
	d := &document{md: &md, top: top}
	c := Default()
	var terminals toml.Primitive  // the [[terminal]] tables, once decoded
	var extensions toml.Primitive // the [[extension]] tables, once decoded
	var setups toml.Primitive     // the [[setup]] tables, once decoded
	for _, key := range d.keys() {
		switch key {
		case "discovery":
			if err := md.PrimitiveDecode(top[key], &c.Discovery); err != nil {
				return Config{}, d.errorAt(toml.Key{key}, key+" must be true or false")
			}
		case "notify":
			if err := md.PrimitiveDecode(top[key], &c.Notify); err != nil {
				return Config{}, d.errorAt(toml.Key{key}, key+" must be true or false")
			}
		case "quiet":
			var s string
			err := md.PrimitiveDecode(top[key], &s)
			q, perr := time.ParseDuration(s)
			if err != nil || perr != nil || q < minQuiet || q > maxQuiet {
				return Config{}, d.errorAt(toml.Key{key}, fmt.Sprintf("quiet must be a duration from %v to %v, like \"2s\"", minQuiet, maxQuiet))
			}
			c.Quiet = q
		case "worktrees":
			err := md.PrimitiveDecode(top[key], &c.Worktrees)
			if err != nil || !(strings.HasPrefix(c.Worktrees, "/") || strings.HasPrefix(c.Worktrees, "~/")) || strings.ContainsFunc(c.Worktrees, unicode.IsControl) {
				return Config{}, d.errorAt(toml.Key{key}, `worktrees must be a folder's absolute path, or one that starts with ~/, like "~/big-disk/worktrees"`)
			}
		case "terminal":
			terms, err := d.terminals(top[key])
			if err != nil {
				return Config{}, err
			}
			c.Terminals = terms
			terminals = top[key]
		case "agent":
			agents, err := d.agents(top[key])
			if err != nil {
				return Config{}, err
			}
			c.Agents = agents
		case "editor":
			t, err := d.subtable(key)
			if err != nil {
				return Config{}, err
			}
			for k, v := range t {
				var dst *[]string
				switch k {
				case "command":
					dst = &c.Editor.Command
				case "ssh_command":
					dst = &c.Editor.SSHCommand
				default:
					return Config{}, &Error{Line: d.valueLine(v), Msg: "unknown key " + quote(k) + " in [editor]; the keys are command and ssh_command"}
				}
				if md.PrimitiveDecode(v, dst) != nil || len(*dst) == 0 || (*dst)[0] == "" || slices.ContainsFunc(*dst, func(w string) bool { return strings.IndexByte(w, 0) >= 0 }) {
					return Config{}, &Error{Line: d.valueLine(v), Msg: "editor " + k + ` must be a program and its arguments, like ["code", "--wait", "--goto", "{file}:{line}"]`}
				}
			}
		case "git":
			t, err := d.subtable(key)
			if err != nil {
				return Config{}, err
			}
			for k, v := range t {
				if k != "ssh_askpass" {
					return Config{}, &Error{Line: d.valueLine(v), Msg: "unknown key " + quote(k) + " in [git]; the key is ssh_askpass"}
				}
				if md.PrimitiveDecode(v, &c.SSHAskpass) != nil {
					return Config{}, &Error{Line: d.valueLine(v), Msg: "git ssh_askpass must be true or false"}
				}
			}
		case "environment":
			envs, err := d.environments(top[key])
			if err != nil {
				return Config{}, err
			}
			c.Environments = envs
		case "setup":
			ss, err := d.setups(top[key])
			if err != nil {
				return Config{}, err
			}
			c.Setups = ss
			setups = top[key]
		case "extension":
			exts, err := d.extensions(top[key])
			if err != nil {
				return Config{}, err
			}
			c.Extensions = exts
			extensions = top[key]
		default:
			return Config{}, d.errorAt(toml.Key{key}, "unknown key "+quote(key))
		}
	}
	// Only now are all the environments and agents known: a [[terminal]] may come before its
	// environment, or its agent.
	if err := d.checkEnvironments(terminals, c); err != nil {
		return Config{}, err
	}
	if err := d.checkAgents(terminals, c); err != nil {
		return Config{}, err
	}
	if err := d.checkLent(extensions, c); err != nil {
		return Config{}, err
	}
	if err := d.checkSetups(setups, c); err != nil {
		return Config{}, err
	}
	return c, nil
}

// checkLent refuses an [[extension]] lent to an environment no [[environment]] names: a typo
// would otherwise lend it to nothing, silently. extensions is the tables c.Extensions came from.
func (d *document) checkLent(extensions toml.Primitive, c Config) error {
	names := append(c.environmentNames(), "*")
	var tables []map[string]toml.Primitive
	_ = d.md.PrimitiveDecode(extensions, &tables) // decoded once already, by extensions
	for i, x := range c.Extensions {
		for _, env := range x.Environments {
			if !slices.Contains(names, env) {
				return &Error{Line: d.valueLine(tables[i]["environments"]),
					Msg: "extension environments: " + quote(env) + " is not named by an [[environment]]; the names are " + strings.Join(names, ", ")}
			}
		}
	}
	return nil
}

// keysInOrder is the keys of table in the order the file gives them, so that the first bad one is
// the one reported.
func (d *document) keysInOrder(table map[string]toml.Primitive) []string {
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return d.valueLine(table[a]) - d.valueLine(table[b]) })
	return keys
}

// tables decodes p as the array of tables name ([[name]]): an error at its line when it is not.
func (d *document) tables(p toml.Primitive, name string) ([]map[string]toml.Primitive, error) {
	var tables []map[string]toml.Primitive
	if err := d.md.PrimitiveDecode(p, &tables); err != nil {
		return nil, d.errorAt(toml.Key{name}, name+" must be [["+name+"]] tables")
	}
	return tables, nil
}

// tableOf is one [[name]] table as decodeTables reads it: its values by key, and the lines of its
// first and last keys, for an error about the table as a whole.
type tableOf struct {
	values      map[string]toml.Primitive
	first, last int
}

// decodeTables decodes p, the [[name]] tables, into a T each: key decodes one key's value into the
// table's T, the keys in the file's order (bad makes the error that points at that value's line),
// then whole checks the table as a whole. The first error ends it.
func decodeTables[T any](d *document, p toml.Primitive, name string,
	key func(t *T, k string, v toml.Primitive, bad func(msg string) error) error,
	whole func(t *T, tab tableOf) error,
) ([]T, error) {
	tables, err := d.tables(p, name)
	if err != nil {
		return nil, err
	}
	var out []T
	for _, table := range tables {
		var t T
		tab := tableOf{values: table}
		for i, k := range d.keysInOrder(table) {
			v := table[k]
			line := d.valueLine(v)
			if i == 0 {
				tab.first = line
			}
			tab.last = max(tab.last, line)
			if err := key(&t, k, v, func(msg string) error { return &Error{Line: line, Msg: msg} }); err != nil {
				return nil, err
			}
		}
		if err := whole(&t, tab); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// extensions decodes the [[extension]] tables.
func (d *document) extensions(p toml.Primitive) ([]Extension, error) {
	seen := map[string]bool{}
	return decodeTables(d, p, "extension", func(x *Extension, k string, v toml.Primitive, bad func(string) error) error {
		switch k {
		case "name":
			if d.md.PrimitiveDecode(v, &x.Name) != nil || api.ValidExtensionName(x.Name) != nil {
				return bad("extension name must be 1 to 40 of a-z, 0-9, - and _, like \"tracker\"")
			}
			if seen[x.Name] {
				return bad("a second [[extension]] named " + quote(x.Name))
			}
			seen[x.Name] = true
		case "command":
			if d.md.PrimitiveDecode(v, &x.Command) != nil || len(x.Command) == 0 || x.Command[0] == "" ||
				slices.ContainsFunc(x.Command, func(a string) bool { return strings.IndexByte(a, 0) >= 0 }) {
				return bad(`extension command must be the program and its arguments, like ["tracker-mcp", "--stdio"]`)
			}
		case "env":
			if d.md.PrimitiveDecode(v, &x.Env) != nil {
				return bad(`extension env must be a table of strings, like { TRACKER_PROFILE = "work" }`)
			}
			for name, val := range x.Env {
				if !envName(name) || strings.IndexByte(val, 0) >= 0 {
					return bad("extension env: " + quote(name) + " must be a variable's name (letters, digits and _, not first a digit) with a value without NUL bytes")
				}
				if strings.HasPrefix(name, api.VarPrefix) {
					return bad("extension env: " + quote(name) + ": the " + api.VarPrefix + "* variables are the app's terminals' own")
				}
			}
		case "environments":
			if d.md.PrimitiveDecode(v, &x.Environments) != nil {
				return bad(`extension environments must be a list of environment names, like ["main", "build"]`)
			}
		default:
			return bad("unknown key " + quote(k) + " in [[extension]]; the keys are name, command, env and environments")
		}
		return nil
	}, func(x *Extension, tab tableOf) error {
		if x.Name == "" || len(x.Command) == 0 {
			return &Error{Line: tab.last, Msg: "an [[extension]] needs a name and a command"}
		}
		return nil
	})
}

// envName says whether s may name an environment variable.
func envName(s string) bool {
	if s == "" || len(s) > 200 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// environmentNames are the names a [[terminal]], a [[setup]] or an [[extension]] may give an
// environment: "main", the local one, then each [[environment]]'s.
func (c Config) environmentNames() []string {
	names := []string{"main"}
	for _, e := range c.Environments {
		names = append(names, e.Name)
	}
	return names
}

// checkEnvironments refuses a [[terminal]] whose environment no [[environment]] names: the app
// would have nowhere to open it. terminals is the tables c.Terminals was decoded from.
func (d *document) checkEnvironments(terminals toml.Primitive, c Config) error {
	if len(c.Terminals) == 0 {
		return nil
	}
	names := c.environmentNames()
	var tables []map[string]toml.Primitive
	_ = d.md.PrimitiveDecode(terminals, &tables) // decoded once already, by terminals
	for i, t := range c.Terminals {
		if _, set := tables[i]["environment"]; !set || slices.Contains(names, t.Environment) {
			continue
		}
		known := "the environments are " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
		if len(names) == 1 {
			known = "the only environment is main, this computer"
		}
		return &Error{Line: d.valueLine(tables[i]["environment"]),
			Msg: "terminal environment " + quote(t.Environment) + " is not named by an [[environment]]: " + known}
	}
	return nil
}

// checkAgents refuses a [[terminal]] whose agent no [[agent]] names. terminals is the tables
// c.Terminals was decoded from.
func (d *document) checkAgents(terminals toml.Primitive, c Config) error {
	var tables []map[string]toml.Primitive
	for i, t := range c.Terminals {
		if t.Agent == "" || slices.ContainsFunc(c.Agents, func(a Agent) bool { return a.Name == t.Agent }) {
			continue
		}
		if tables == nil {
			_ = d.md.PrimitiveDecode(terminals, &tables) // decoded once already, by terminals
		}
		return &Error{Line: d.valueLine(tables[i]["agent"]), Msg: "terminal agent " + quote(t.Agent) + " is not named by an [[agent]]: " + AgentsKnown(c.Agents)}
	}
	return nil
}

// AgentsKnown says which agent profiles there are, for an error about one that is not there:
// "the agents are a and b", or how to add one.
func AgentsKnown(agents []Agent) string {
	if len(agents) == 0 {
		return "config.toml names no agents; add an [[agent]] table with its name, command and kind"
	}
	names := make([]string, len(agents))
	for i, a := range agents {
		names[i] = a.Name
	}
	if len(names) == 1 {
		return "the only agent is " + names[0]
	}
	return "the agents are " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// Load reads the config file at path (a relative path is taken from the current folder, and the
// folders above that are checked too). A missing file gives [Default] and no error; a file or
// folder that others could have written a [*ModeError] (see the package's security model); a file
// that cannot be read an error that wraps the cause, and a file that does not parse an [*Error].
func Load(path string) (Config, error) {
	data, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return Config{}, err
	}
	return Parse(data)
}

// Callbacks are what [WatchAll] calls; any may be nil.
type Callbacks struct {
	Change func(Config) // each new valid config
	Error  func(error)  // each error
	// Recovered is called when the file reads and parses again after an error but says what
	// the last good config said, so that Change is not called: a screen that showed the error
	// can clear it.
	Recovered func()
	// Holding is called when a look finds a config that would close SSH environments (their
	// names: [[environment]] tables gone or changed) in a file changed within closeSettle (2 s):
	// it is applied once the file has been left alone that long, and never if the file changes
	// first (a file being written). Once for each such config.
	Holding func(closes []string)
}

// WatchAll watches the config file at path until ctx is done. It reads the file when it starts,
// every interval (DefaultInterval if interval <= 0), and at once whenever a value arrives on
// reload (nil for none). current is the config the caller has now, from Load.
//
// WatchAll calls cb.Change with each new valid config that differs from the last one, and
// cb.Error with each error, once per distinct file content (or read error) rather than once a
// poll; after a value on reload it reports an error that persists again. A broken or unreadable file, or one
// that others could have written (a [*ModeError]), changes nothing: the last good config stays.
// A deleted file means [Default]. A poll reads the file only when its metadata changed (or
// changed just before the last poll, or the last read failed), and a change is found by content
// (package internal/filestate): a rewrite within one mtime tick is not missed, and an untouched
// file costs a stat. So folders whose modes change above an untouched, good file are checked
// again when the file changes, or on reload. A file changed in the moment before a look (settle)
// is judged once it has been left alone that long: one written in place is not read half-written.
// A config that would close SSH environments waits longer (closeSettle), so that neither the
// empty file between a truncate and a slow write nor a file cut before its last tables closes
// one.
//
// The callbacks run on WatchAll's goroutine, one at a time.
func WatchAll(ctx context.Context, path string, interval time.Duration, reload <-chan struct{}, current Config, cb Callbacks) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	w := &watcher{file: filestate.File{Path: path}, last: current, onChange: cb.Change, onError: cb.Error, onRecovered: cb.Recovered, onHolding: cb.Holding}
	// again fires when a look found the file in flux, to look once it has settled.
	var again <-chan time.Time
	look := func() {
		if d := w.check(); d > 0 {
			again = time.After(d)
		}
	}
	look()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			look()
		case <-again:
			again = nil
			look()
		case _, ok := <-reload:
			if !ok {
				reload = nil // a closed channel would fire for ever
				continue
			}
			w.file.Forget()
			look()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

type watcher struct {
	file        filestate.File // what the file was at the last check
	last        Config         // the last good config
	failed      bool           // the last check reported an error
	held        *Config        // the config that closes environments, held until the file settles
	onChange    func(Config)
	onError     func(error)
	onRecovered func()
	onHolding   func([]string)
}

// settle is how long the file must have been left alone before a look takes what it read for
// the config. An editor or a shell's `>` writes the file in place: truncated, then written. A
// look between the two would read a config with no environments, and close every SSH
// environment until the next look opened them again; or half a file, and report an error that
// no one made. Tests lengthen it.
var settle = 150 * time.Millisecond

// closeSettle is how long the file must have been left alone before a look takes what it read
// for a config that closes SSH environments: one of the last config's [[environment]] tables
// gone, or changed (closed and connected again). The empty file between a truncate and its write
// says "no environments", and a file cut short can lack its last tables; under load the writer
// can be held off between the two past settle (a test on a busy machine saw it), and it is
// closing an environment that such a misreading costs: its connection, its token file on the
// host, a reconnect and adoption after. So a closing waits the longer settle, which a person
// who removes an environment does not notice, while every other change (an environment added,
// discovery) keeps the short one. Waiting for the file to be left alone rather than believing
// an empty file only once it stays empty covers the file cut short too. Tests shorten it.
var closeSettle = 2 * time.Second

// check looks at the file and reports what changed. It returns how long to wait before looking
// again when the file was in flux (being written, or replaced as it was opened), and 0 otherwise.
func (w *watcher) check() (again time.Duration) {
	changed, data, err := w.file.Look(readFile)
	if !changed {
		return 0
	}
	if errors.Is(err, errReplaced) || w.file.ChangedWithin(settle) {
		// Caught as it was being written or replaced: no verdict on a file in flux.
		w.file.Forget()
		return settle
	}

	c := Default()
	if err == nil {
		c, err = Parse(data)
	} else if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		w.failed = true
		if w.onError != nil {
			w.onError(err)
		}
		return 0
	}
	if closes := closedEnvironments(w.last, c); len(closes) > 0 && w.file.ChangedWithin(closeSettle) {
		// Perhaps a file still being written: believed once it has been left alone that long.
		if w.held == nil || !reflect.DeepEqual(*w.held, c) {
			w.held = &c
			if w.onHolding != nil {
				w.onHolding(closes)
			}
		}
		w.file.Forget()
		return settle
	}
	w.held = nil
	failed := w.failed
	w.failed = false
	// DeepEqual, not ==, so that Config may grow slices of tables.
	if reflect.DeepEqual(c, w.last) {
		if failed && w.onRecovered != nil {
			w.onRecovered()
		}
		return 0
	}
	w.last = c
	if w.onChange != nil {
		w.onChange(c)
	}
	return 0
}

// closedEnvironments are the names of the [[environment]] tables of last that c drops or changes:
// the SSH environments that applying c would close.
func closedEnvironments(last, c Config) []string {
	var closes []string
	for _, was := range last.Environments {
		if i := slices.IndexFunc(c.Environments, func(e Environment) bool { return e.Name == was.Name }); i < 0 || c.Environments[i] != was {
			closes = append(closes, was.Name)
		}
	}
	return closes
}

// errReplaced is readFile's error when the file was replaced between its check and its opening.
var errReplaced = errors.New("it changed while it was opened; try again")

// readFile reads at most maxSize bytes of path, once [CheckFolder] passed its folder and checkFile
// the file. A missing file gives an error matching fs.ErrNotExist; a file or folder that others
// could have written, a *ModeError.
func readFile(path string) ([]byte, error) {
	// Absolute, so that checkFile's look above a symlink's target starts from where it is.
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", FileName, err)
	}
	if err := CheckFolder(filepath.Dir(path)); err != nil {
		return nil, err
	}
	// Look before opening, so that a FIFO or a device is refused without being opened.
	before, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", FileName, err)
	}
	if err := checkFile(path, before); err != nil {
		return nil, err
	}
	fh, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", FileName, err)
	}
	defer fh.Close()
	// What was opened is what counts: the file that was checked, not one swapped in since.
	if fi, err := fh.Stat(); err != nil || !os.SameFile(before, fi) {
		return nil, fmt.Errorf("read %s: %w", FileName, errReplaced)
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", FileName, err)
	}
	if len(data) > maxSize {
		return nil, &Error{Msg: fmt.Sprintf("larger than %d MiB", maxSize>>20)}
	}
	return data, nil
}

// terminals decodes the [[terminal]] tables.
func (d *document) terminals(p toml.Primitive) ([]Terminal, error) {
	return decodeTables(d, p, "terminal", func(t *Terminal, k string, v toml.Primitive, bad func(string) error) error {
		var dst *string
		switch k {
		case "title":
			if d.md.PrimitiveDecode(v, &t.Title) != nil {
				break
			}
			if err := api.CheckTitle(t.Title); err != nil {
				return bad("terminal " + err.Error())
			}
			return nil
		case "command":
			dst = &t.Command
		case "agent":
			dst = &t.Agent
		case "dir":
			dst = &t.Dir
		case "environment":
			dst = &t.Environment
		case "lead":
			if d.md.PrimitiveDecode(v, &t.Lead) != nil {
				return bad("terminal lead must be true or false")
			}
			return nil
		default:
			return bad("unknown key " + quote(k) + " in [[terminal]]; the keys are title, command, agent, dir, lead and environment")
		}
		if dst == nil || d.md.PrimitiveDecode(v, dst) != nil {
			return bad("terminal " + k + " must be a string")
		}
		return nil
	}, func(t *Terminal, tab tableOf) error {
		if t.Agent != "" && t.Command != "" {
			return &Error{Line: max(d.valueLine(tab.values["agent"]), d.valueLine(tab.values["command"])),
				Msg: "a [[terminal]] runs a command or an agent, not both: the agent's command is in its [[agent]] table"}
		}
		return nil
	})
}

// agents decodes the [[agent]] tables.
func (d *document) agents(p toml.Primitive) ([]Agent, error) {
	seen := map[string]bool{}
	return decodeTables(d, p, "agent", func(a *Agent, k string, v toml.Primitive, bad func(string) error) error {
		switch k {
		case "name":
			if d.md.PrimitiveDecode(v, &a.Name) != nil || !agentName(a.Name) {
				return bad("agent name must be 1 to 40 of a-z, 0-9, - and _, like \"claude\"")
			}
			if seen[a.Name] {
				return bad("a second [[agent]] named " + quote(a.Name))
			}
			seen[a.Name] = true
		case "command":
			if d.md.PrimitiveDecode(v, &a.Command) != nil || strings.TrimSpace(a.Command) == "" || strings.IndexByte(a.Command, 0) >= 0 {
				return bad("agent command must be a shell command line, like \"claude\"")
			}
		case "prompt":
			var how string
			if d.md.PrimitiveDecode(v, &how) != nil || how != "typed" && how != "argument" {
				return bad(`agent prompt must be "typed" or "argument"`)
			}
			a.PromptArg = how == "argument"
		case "kind":
			if d.md.PrimitiveDecode(v, &a.Kind) != nil || !agenthooks.Known(a.Kind) {
				return bad("agent kind must be " + kindList() + ": the agent CLIs whose hooks krad-ade installs (none, for another command)")
			}
		default:
			return bad("unknown key " + quote(k) + " in [[agent]]; the keys are name, command, prompt and kind")
		}
		return nil
	}, func(a *Agent, tab tableOf) error {
		if a.Name == "" || a.Command == "" {
			return &Error{Line: tab.last, Msg: "an [[agent]] needs a name and a command"}
		}
		return nil
	})
}

// kindList is the kinds of agent, quoted, for a message: "claude", "codex" or "gemini".
func kindList() string {
	q := make([]string, len(agenthooks.Kinds))
	for i, k := range agenthooks.Kinds {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// agentName says whether s may name an agent profile.
func agentName(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// environments decodes the [[environment]] tables.
func (d *document) environments(p toml.Primitive) ([]Environment, error) {
	seen := map[string]bool{"main": true}
	return decodeTables(d, p, "environment", func(e *Environment, k string, v toml.Primitive, bad func(string) error) error {
		var dst *string
		switch k {
		case "name":
			dst = &e.Name
		case "ssh":
			dst = &e.SSH
		case "dir":
			dst = &e.Dir
		default:
			return bad("unknown key " + quote(k) + " in [[environment]]; the keys are name, ssh and dir")
		}
		if d.md.PrimitiveDecode(v, dst) != nil {
			return bad("environment " + k + " must be a string")
		}
		return nil
	}, func(e *Environment, tab tableOf) error {
		switch {
		case e.Name == "" || e.SSH == "":
			return &Error{Line: tab.first, Msg: "an [[environment]] needs a name and an ssh host"}
		case api.ValidEnvironment(e.Name) != nil:
			return &Error{Line: d.valueLine(tab.values["name"]), Msg: fmt.Sprintf("environment name %s must be 1 to %d letters, digits, '_' and '-', not starting with '-'", quote(e.Name), api.MaxEnvironmentName)}
		case seen[e.Name]:
			return &Error{Line: d.valueLine(tab.values["name"]), Msg: "environment " + quote(e.Name) + " is named twice (main is this computer)"}
		}
		seen[e.Name] = true
		return nil
	})
}

// valueLine is the line of a value, or 0 if the decoder does not know.
func (d *document) valueLine(p toml.Primitive) int {
	var pe toml.ParseError
	if errors.As(d.md.PrimitiveDecode(p, probe{}), &pe) {
		return max(pe.Position.Line, 0)
	}
	return 0
}

// document is a parsed file whose values are still undecoded, so that each key is decoded by name
// and any key can be found on its line.
type document struct {
	md  *toml.MetaData
	top map[string]toml.Primitive
}

// keys returns the top-level keys in the order the file gives them.
func (d *document) keys() []string {
	var keys []string
	for _, k := range d.md.Keys() {
		if !slices.Contains(keys, k[0]) {
			keys = append(keys, k[0])
		}
	}
	// Keys lists every key; this is only in case it ever leaves one out.
	for k := range d.top {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// subtable is the top-level table [key] ([editor], [git]), its keys undecoded; a key of another
// type is an error at its line.
func (d *document) subtable(key string) (map[string]toml.Primitive, error) {
	var t map[string]toml.Primitive
	if d.md.Type(key) != "Hash" || d.md.PrimitiveDecode(d.top[key], &t) != nil {
		return nil, d.errorAt(toml.Key{key}, key+" must be a table: ["+key+"]")
	}
	return t, nil
}

func (d *document) errorAt(key toml.Key, msg string) *Error {
	return &Error{Line: d.line(key), Msg: msg}
}

// line is where key is defined, or 0 if the decoder does not know. A key that is only implied by
// a longer one (a in "a.b.c = 1") is where its first descendant is.
func (d *document) line(key toml.Key) int {
	if n := d.ownLine(key); n > 0 {
		return n
	}
	for _, k := range d.md.Keys() {
		if len(k) > len(key) && slices.Equal(k[:len(key)], key) {
			if n := d.ownLine(k); n > 0 {
				return n
			}
		}
	}
	return 0
}

// ownLine finds key's line by decoding its value into a probe that fails: the library attaches
// the key's position to a failure of an Unmarshaler, and to nothing else it returns.
func (d *document) ownLine(key toml.Key) int {
	p, ok := d.top[key[0]]
	for _, k := range key[1:] {
		if !ok {
			break
		}
		p, ok = d.child(p, k)
	}
	if !ok {
		return 0
	}
	var pe toml.ParseError
	if errors.As(d.md.PrimitiveDecode(p, probe{}), &pe) {
		return max(pe.Position.Line, 0)
	}
	return 0
}

// child is the value of key k in table p, or in the first of the tables p that has one.
func (d *document) child(p toml.Primitive, k string) (toml.Primitive, bool) {
	var table map[string]toml.Primitive
	if d.md.PrimitiveDecode(p, &table) == nil {
		c, ok := table[k]
		return c, ok
	}
	var tables []map[string]toml.Primitive
	if d.md.PrimitiveDecode(p, &tables) == nil {
		for _, t := range tables {
			if c, ok := t[k]; ok {
				return c, true
			}
		}
	}
	return toml.Primitive{}, false
}

type probe struct{}

func (probe) UnmarshalTOML(any) error { return errProbe }

var errProbe = errors.New("probe")

// fromTOML turns an error of the TOML library about data into an *Error.
func fromTOML(data []byte, err error) *Error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &Error{Line: errorLine(data, pe), Msg: message(pe.Message)}
	}
	return &Error{Msg: message(strings.TrimPrefix(err.Error(), "toml: "))}
}

// errorLine is the line of a syntax error. The library's lexer counts a line as soon as it reads
// the newline that ends it, so when the newline is what it did not expect ("got '\n'"), its line
// number is that of the next line; the error's offset, where the unfinished item began, is on the
// right one. (For other errors the item may span lines, a multi-line string, and the library's
// line is the one at fault.)
func errorLine(data []byte, pe toml.ParseError) int {
	line := max(pe.Position.Line, 0)
	if start := pe.Position.Start; strings.Contains(pe.Message, `'\n'`) && start >= 0 && start < len(data) {
		line = min(line, 1+bytes.Count(data[:start], []byte("\n")))
	}
	return line
}

// message makes a library message read like ours: "Key 'a' has already been defined." becomes
// "key 'a' has already been defined" (but "TOML files …" stays).
func message(s string) string {
	s = strings.TrimSuffix(printable(s), ".")
	if len(s) > 1 && 'A' <= s[0] && s[0] <= 'Z' && 'a' <= s[1] && s[1] <= 'z' {
		s = string(s[0]+'a'-'A') + s[1:]
	}
	return s
}

// quote quotes a key for an error, shortened if it is long.
func quote(s string) string {
	return fmt.Sprintf("%q", termsafe.Shorten(s, 40))
}

// printable makes a library message safe to print: valid UTF-8, no control characters, not long.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	return termsafe.Shorten(s, 200)
}
