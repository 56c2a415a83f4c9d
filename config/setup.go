package config

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/BurntSushi/toml"
)

// Setup is one [[setup]] table: what each new group's checkout gets, in the repositories it
// names. The first table that matches a repository applies; a table that names no repository is
// for every repository (of its environment, when it names one).
//
//	[[setup]]
//	environment = "main"             # the environment it is for; none: every one
//	path = "~/src/app"               # the repository whose main checkout is there (on the environment's host)
//	remote = "github.com/me/app"     # or a repository with this remote, whatever its URL's form
//	include = [".env", "*.local"]    # more ignored files to copy from the main checkout (gitignore patterns)
//	command = "npm ci"               # a shell command line run in each new group's first terminal
//	timeout = "10m"                  # its limit (default 10m, at most 2h)
//
// A repository names its own files to copy in .worktreeinclude; this table adds to them. Files
// are copied only if git ignores them, never through a symlink (see the worktree package). The
// command comes from this file alone, never from a repository: a cloned repository must not run
// code by being opened.
type Setup struct {
	Environment string
	Path        string
	Remote      string
	Include     []string
	Command     string
	// Timeout is the command's limit; 0 is the default (worktree.DefaultSetupTimeout).
	Timeout time.Duration
}

// Bounds of a [[setup]] table.
const (
	maxIncludePatterns = 100
	maxPattern         = 1000
	minSetupTimeout    = time.Second
	maxSetupTimeout    = 2 * time.Hour
)

// setups decodes the [[setup]] tables.
func (d *document) setups(p toml.Primitive) ([]Setup, error) {
	return decodeTables(d, p, "setup", func(s *Setup, k string, v toml.Primitive, bad func(string) error) error {
		switch k {
		case "environment":
			if d.md.PrimitiveDecode(v, &s.Environment) != nil || s.Environment == "" {
				return bad(`setup environment must be an environment's name, like "main"`)
			}
		case "path":
			if d.md.PrimitiveDecode(v, &s.Path) != nil || !(strings.HasPrefix(s.Path, "/") || strings.HasPrefix(s.Path, "~/")) || strings.ContainsFunc(s.Path, unicode.IsControl) {
				return bad(`setup path must be a repository's folder, absolute or from ~/, like "~/src/app"`)
			}
		case "remote":
			if d.md.PrimitiveDecode(v, &s.Remote) != nil || strings.TrimSpace(s.Remote) == "" || strings.ContainsFunc(s.Remote, unicode.IsControl) {
				return bad(`setup remote must be a remote's URL, or its host and path, like "github.com/me/app"`)
			}
		case "include":
			if d.md.PrimitiveDecode(v, &s.Include) != nil || len(s.Include) > maxIncludePatterns ||
				slices.ContainsFunc(s.Include, func(p string) bool {
					return strings.TrimSpace(p) == "" || len(p) > maxPattern || strings.ContainsFunc(p, unicode.IsControl)
				}) {
				return bad(`setup include must be a list of up to 100 gitignore patterns, one line each, like [".env", "config/*.local"]`)
			}
		case "command":
			if d.md.PrimitiveDecode(v, &s.Command) != nil || strings.TrimSpace(s.Command) == "" || strings.IndexByte(s.Command, 0) >= 0 {
				return bad(`setup command must be a shell command line, like "npm ci"`)
			}
		case "timeout":
			var t string
			err := d.md.PrimitiveDecode(v, &t)
			dur, perr := time.ParseDuration(t)
			if err != nil || perr != nil || dur < minSetupTimeout || dur > maxSetupTimeout {
				return bad(fmt.Sprintf("setup timeout must be a duration from %v to %v, like \"10m\"", minSetupTimeout, maxSetupTimeout))
			}
			s.Timeout = dur
		default:
			return bad("unknown key " + quote(k) + " in [[setup]]; the keys are environment, path, remote, include, command and timeout")
		}
		return nil
	}, func(s *Setup, tab tableOf) error {
		if len(s.Include) == 0 && s.Command == "" {
			return &Error{Line: tab.last, Msg: "a [[setup]] needs include or command: what it gives new groups"}
		}
		return nil
	})
}

// checkSetups refuses a [[setup]] for an environment no [[environment]] names: a typo would
// otherwise set nothing up, silently. setups is the tables c.Setups came from.
func (d *document) checkSetups(setups toml.Primitive, c Config) error {
	names := c.environmentNames()
	var tables []map[string]toml.Primitive
	_ = d.md.PrimitiveDecode(setups, &tables) // decoded once already, by setups
	for i, s := range c.Setups {
		if s.Environment != "" && !slices.Contains(names, s.Environment) {
			return &Error{Line: d.valueLine(tables[i]["environment"]),
				Msg: "setup environment " + quote(s.Environment) + " is not named by an [[environment]]; the names are " + strings.Join(names, ", ")}
		}
	}
	return nil
}
