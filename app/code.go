package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"runtime"
	"strconv"
	"strings"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/worktree"
)

// Editor is how the app opens a file in the person's editor: [editor] in config.toml. Command is
// the editor's argv for a file of this computer, SSHCommand for a file of an SSH host (VS Code's
// "code --remote ssh-remote+{host}"). In each argument {file} is the file's absolute path, {line}
// the line (1 when the request names none) and, in SSHCommand, {host} the environment's ssh
// host as config.toml names it. The words are handed to the program as they are: no shell reads
// them.
type Editor struct {
	Command    []string
	SSHCommand []string
}

// editorHint is the line a person adds to config.toml when no editor is configured, for the
// system goos the app runs on. On macOS the code command is VS Code's own (its "Shell Command:
// Install 'code' command in PATH" puts it in /usr/local/bin, which the app adds to a thin PATH),
// and open -t is the way to the default text editor that every Mac has (it takes no line).
func editorHint(goos string) string {
	const code = `[editor] command = ["code", "--wait", "--goto", "{file}:{line}"] (and ssh_command = ["code", "--wait", "--remote", "ssh-remote+{host}", "--goto", "{file}:{line}"] for SSH hosts)`
	if goos == "darwin" {
		return `add [editor] to config.toml, like: ` + code + `, with VS Code's code command installed (VS Code: "Shell Command: Install 'code' command in PATH"); or command = ["open", "-t", "{file}"] for macOS's default text editor`
	}
	return `add [editor] to config.toml, like: ` + code
}

// argv is the editor's command line for file at line, on host ("" for this computer).
func (ed Editor) argv(host, file string, line int) ([]string, error) {
	words := ed.Command
	if host != "" {
		words = ed.SSHCommand
	}
	if len(words) == 0 {
		where := "files of this computer"
		if host != "" {
			where = "files of SSH hosts"
		}
		return nil, api.Errorf(api.CodeUnavailable, "no editor is configured for %s: %s", where, editorHint(runtime.GOOS))
	}
	r := strings.NewReplacer("{file}", file, "{line}", strconv.Itoa(line), "{host}", host)
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = r.Replace(w)
	}
	return out, nil
}

// code answers Code: the file, which must be in the caller's environment folder or its group's
// checkout, opened in the person's editor; with Wait, once the editor exits. The file and the
// folders are compared resolved where they are (worktree.OpResolve: on this computer, or on the
// SSH host by the static krad there), so that a symlink out of the folder is not a way out.
func (a *App) code(ctx context.Context, from api.TerminalID, b *api.CodeBody) error {
	e, err := a.env(ctx, from.Environment)
	if err != nil {
		return err
	}
	group, _ := a.groupOf(from.Environment, from.Terminal)
	local := e.local()
	roots := []string{e.host.Vars().Dir}
	if lh, ok := e.host.(*localHost); ok {
		roots[0] = lh.dir
	}
	if group != "" {
		res, err := e.worktree(ctx, worktree.Op{Op: worktree.OpGroups})
		if err == nil && res.List != nil {
			for _, g := range res.List.Groups {
				if g.Name == group {
					roots = append(roots, g.Dir)
				}
			}
		}
	}
	forbidden := api.Errorf(api.CodeForbidden, "%s is outside this terminal's environment folder and group: Code opens only files of the caller's own checkout", shortPath(b.Path))
	paths := []string{b.Path}
	for _, r := range roots {
		if path.IsAbs(r) {
			paths = append(paths, r)
		}
	}
	res, err := e.worktree(ctx, worktree.Op{Op: worktree.OpResolve, Resolve: &worktree.ResolveOptions{Paths: paths}})
	if err != nil {
		return err
	}
	if res.Resolved == nil || len(res.Resolved.Paths) != len(paths) {
		return fmt.Errorf("resolve %s: the host's answer does not hold its %d paths", shortPath(b.Path), len(paths))
	}
	file, resolved := res.Resolved.Paths[0], res.Resolved.Paths[1:]
	if file == "" {
		if !inside(path.Clean(b.Path), paths[1:]) {
			return forbidden
		}
		return api.Errorf(api.CodeNotFound, "no file %s, nor its folder", shortPath(b.Path))
	}
	if !inside(file, resolved) {
		return forbidden
	}
	host := ""
	if !local {
		if host = e.ssh; host == "" {
			// Opened as a file of this computer, the path would name another file, or none.
			return api.Errorf(api.CodeUnavailable, "environment %s names no ssh host for the editor to open %s on", e.name, shortPath(b.Path))
		}
	}
	line := 1
	if b.Line != nil {
		line = *b.Line
	}
	argv, err := a.cfg.Editor.argv(host, file, line)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = os.TempDir()
	if err := cmd.Start(); err != nil {
		return api.Errorf(api.CodeUnavailable, "the editor %s did not start: %v; %s", shortPath(argv[0]), errors.Unwrap(err), "check [editor] command in config.toml")
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if !b.Wait {
		return nil
	}
	select {
	case err := <-exited:
		if err != nil {
			return api.Errorf(api.CodeUnavailable, "the editor %s failed: %v", shortPath(argv[0]), err)
		}
		return nil
	case <-ctx.Done():
		// The editor stays open: the person may be in the middle of their work.
		return ctx.Err()
	}
}

// inside says whether file is one of roots or under one, all of them absolute and clean (resolved
// by worktree.OpResolve, or cleaned as written); an empty root holds nothing.
func inside(file string, roots []string) bool {
	for _, r := range roots {
		if r == "" || !path.IsAbs(r) {
			continue
		}
		r = path.Clean(r)
		if file == r || strings.HasPrefix(file, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// shortPath is a path for an error message: escaped, and cut when long.
func shortPath(p string) string { return termsafeName(p) }
