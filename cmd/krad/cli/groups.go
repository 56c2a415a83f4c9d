package cli

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/worktree"
)

// How krad shows groups to people. Names, branches and paths came from the app (a path from git,
// any bytes), and are escaped with termsafe; a patch is printed as its bytes, for git apply.

// worktreeCommand is `krad worktree create`: CreateWorktree.
func worktreeCommand() *command {
	var base, branch string
	create := &command{
		name:    "create",
		args:    "[NAME] [--base REF] [--branch B] [--json]",
		summary: "make a group: a git worktree of this environment's repository",
		json:    "print the group as one JSON object",
		help: `
Makes a group: a git worktree of the repository that holds this environment's folder, on a new
branch krad/NAME from REF (by default the main checkout's HEAD), checked out outside the
repository. It prints the group:

  main:fix-retry  krad/fix-retry  from 3f2a9c1  ~/.local/share/krad-ade/worktrees/app-1a2b3c4d/fix-retry

NAME is 1 to 40 of a-z, 0-9 and -; without it the app picks one. A group, branch or folder of
that name that exists already is an error, and nothing is touched. With --branch, the group
continues branch B instead (a branch kept by a retired group comes back with its uncommitted
work). Start workers in it with krad spawn --group NAME.`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&base, "base", "", "the commit `REF` the group starts from (a branch, tag or hash)")
			fs.StringVar(&branch, "branch", "", "continue the existing branch `B` instead of making krad/NAME")
		},
		run: func(x *invocation, args []string) error {
			if len(args) > 1 {
				return x.usageError("%s takes one name, and %s is one too many", x.path, quote(args[1]))
			}
			body := &api.CreateWorktreeBody{Base: base, Branch: branch}
			if len(args) == 1 {
				if err := worktree.ValidName(args[0]); err != nil {
					return x.usageError("%s", strings.TrimPrefix(err.Error(), string(api.CodeBadRequest)+": "))
				}
				body.Name = args[0]
			}
			b, err := x.bus()
			if err != nil {
				return err
			}
			_, err = printAnswer(x, b, api.NewRequest(api.CreateWorktree, body), func(g worktree.Group) error {
				line := x.groupLine(g)
				if g.Restored != "" {
					line += "  (uncommitted work restored from " + short(g.Restored) + ")"
				}
				if err := writeLine(x.stdout, line); err != nil {
					return err
				}
				x.noteIncluded(g.Included)
				return nil
			})
			return err
		},
	}
	return &command{
		name:    "worktree",
		summary: "make groups (git worktrees for workers), and sync them",
		subs:    []*command{create, syncCommand()},
	}
}

// syncCommand is `krad worktree sync G [--rebase|--merge]`: SyncGroup.
func syncCommand() *command {
	var rebase, merge bool
	return &command{
		name:    "sync",
		args:    "G [--merge|--rebase] [--json]",
		summary: "bring group G's branch up to the main checkout's HEAD",
		json:    `print what was done, {"group","branch","how","onto","old","new",…}`,
		help: `
Brings group G's branch (krad/G) up to the main checkout's current HEAD: --merge (the default)
merges HEAD into it, which never rewrites the branch, so one already pushed stays pushable;
--rebase replays its commits onto HEAD, for a straight history (their authors and messages
kept; a commit whose change HEAD has already is dropped). The result is computed off every
checkout first: a conflict changes nothing at all (not the group's files, nor its index, nor
its branch) and names the files. A group with uncommitted work is refused, never stashed:
commit it first. The group's Changes compare with HEAD from then on.`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&merge, "merge", false, "merge HEAD into the branch (the default)")
			fs.BoolVar(&rebase, "rebase", false, "replay the branch's commits onto HEAD")
		},
		run: func(x *invocation, args []string) error {
			if len(args) != 1 {
				return x.usageError("%s takes one group name", x.path)
			}
			if err := worktree.ValidName(args[0]); err != nil {
				return x.usageError("%s", strings.TrimPrefix(err.Error(), string(api.CodeBadRequest)+": "))
			}
			if merge && rebase {
				return x.usageError("--merge or --rebase, not both")
			}
			how := api.SyncMerge
			if rebase {
				how = api.SyncRebase
			}
			b, err := x.bus()
			if err != nil {
				return err
			}
			var s worktree.Synced
			raw, err := b.answer(x.ctx, api.NewRequest(api.SyncGroup, &api.SyncGroupBody{Group: args[0], How: how}), &s)
			if err != nil {
				return err
			}
			if x.json {
				return writeRaw(x.stdout, raw)
			}
			return writeLine(x.stdout, termsafe.Escape(syncedLine(s), 2000))
		},
	}
}

// syncedLine says what a SyncGroup did.
func syncedLine(s worktree.Synced) string {
	onto := cmp.Or(s.OntoName, "HEAD") + " (" + short(s.Onto) + ")"
	switch {
	case s.UpToDate:
		return "group " + s.Group + ": " + s.Branch + " has " + onto + " already: nothing to do"
	case s.FastForward:
		return "group " + s.Group + ": " + s.Branch + " had no commit of its own: now at " + onto
	case s.How == api.SyncRebase:
		line := fmt.Sprintf("group %s: %s rebased onto %s: %d %s replayed, now at %s", s.Group, s.Branch, onto, s.Commits-s.Dropped, plural(s.Commits-s.Dropped, "commit", "commits"), short(s.New))
		if s.Dropped > 0 {
			line += fmt.Sprintf(" (%d dropped: %s had their changes)", s.Dropped, onto)
		}
		return line
	}
	return "group " + s.Group + ": " + onto + " merged into " + s.Branch + " (" + short(s.New) + ")"
}

// noteIncluded tells, on stderr, what of the ignored files .worktreeinclude and the config name
// was copied into a new group's checkout, when not all of them: a cut, files skipped.
func (x *invocation) noteIncluded(in *worktree.Included) {
	if in == nil {
		return
	}
	if in.Cut != "" {
		x.warn("included files: %d copied (%d bytes); %s", in.Files, in.Bytes, in.Cut)
	}
	if len(in.Skipped) > 0 {
		more := ""
		if in.SkippedMore > 0 {
			more = fmt.Sprintf(" and %d more", in.SkippedMore)
		}
		x.warn("included files not copied: %s%s", strings.Join(in.Skipped, ", "), more)
	}
}

// groupLine is a group on one line: "main:fix-retry  krad/fix-retry  from 3f2a9c1  DIR".
func (x *invocation) groupLine(g worktree.Group) string {
	env := "?"
	if id, err := api.ParseTerminalID(x.env(varTerminal)); err == nil {
		env = id.Environment
	}
	return termsafe.Escape(env, api.MaxEnvironmentName) + ":" + termsafe.Escape(g.Name, worktree.MaxNameLen) + "  " +
		termsafe.Escape(g.Branch, 200) + "  from " + short(g.BaseCommit) + "  " + termsafe.Escape(abbreviate(g.Dir, x.env("HOME")), 1000)
}

// short is a commit's hash as people read it.
func short(hash string) string { return termsafe.Escape(hash[:min(len(hash), 7)], 7) }

// groupsCommand is `krad groups`: Groups.
func groupsCommand() *command {
	return &command{
		name:    "groups",
		args:    "[--json]",
		summary: "list this environment's groups and the branches retired ones kept",
		json:    `print {"top","groups","kept"}`,
		help: `
Lists the groups of this environment's repository: each one's name, branch, base commit, first
port (KRAD_ADE_PORT) and checkout; then what retired groups kept: their branches, and the
snapshots of their uncommitted work. Continue a kept branch with krad worktree create --branch.
A group marked held did not retire when its last terminal closed: its checkout holds git data a
snapshot cannot (a nested repository, a submodule with unpushed work), named after "held:".`,
		run: func(x *invocation, args []string) error {
			b, err := x.busNoArgs(args)
			if err != nil {
				return err
			}
			_, err = printAnswer(x, b, api.NewRequest(api.Groups, nil), func(l worktree.List) error {
				return writeGroups(x.stdout, l, x.env("HOME"))
			})
			return err
		},
	}
}

// writeGroups writes a List as two tables.
func writeGroups(w io.Writer, l worktree.List, home string) error {
	var b bytes.Buffer
	if len(l.Groups) == 0 {
		fmt.Fprintf(&b, "no groups in %s\n", termsafe.Escape(abbreviate(l.Top, home), 1000))
	} else {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tBRANCH\tBASE\tPORT\tCHECKOUT")
		for _, g := range l.Groups {
			dir := termsafe.Escape(abbreviate(g.Dir, home), 1000)
			switch {
			case g.Damaged != "":
				dir += "  (damaged: " + termsafe.Escape(g.Damaged, 300) + ")"
			case g.Missing:
				dir += "  (folder gone)"
			case len(g.Held) > 0:
				held := make([]string, len(g.Held))
				for i, h := range g.Held {
					held[i] = termsafe.Escape(h, 300)
				}
				dir += "  (held: " + strings.Join(held, ", ") + " keeps git data a snapshot cannot hold; push or move it)"
			}
			dir += setupNote(g.Setup)
			port := "-"
			if g.Port > 0 {
				port = strconv.Itoa(g.Port)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", termsafe.Escape(g.Name, worktree.MaxNameLen), termsafe.Escape(g.Branch, 200), short(g.BaseCommit), port, dir)
		}
		_ = tw.Flush()
	}
	for _, g := range l.Groups {
		if s := g.Setup; s != nil && s.State == worktree.SetupFailed {
			fmt.Fprintf(&b, "\ngroup %s's setup failed (%s, in %s): it is kept for you to look at; krad retire %s once done. Its output ends:\n%s",
				termsafe.Escape(g.Name, worktree.MaxNameLen), termsafe.Escape(s.Why, 300), termsafe.Escape(cmp.Or(s.Terminal, "?"), 100), termsafe.Escape(g.Name, worktree.MaxNameLen), s.OutputTail(20, 2000))
		}
	}
	if len(l.Kept) > 0 {
		b.WriteString("\nkept by retired groups:\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tBRANCH\tSNAPSHOT")
		for _, k := range l.Kept {
			branch, snap := "-", "-"
			if k.Branch != "" {
				branch = termsafe.Escape(k.Branch, 200) + " (" + short(k.BranchCommit) + ")"
			}
			if k.Snapshot != "" {
				snap = termsafe.Escape(k.Snapshot, 200) + " (" + short(k.SnapshotCommit) + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", termsafe.Escape(k.Name, worktree.MaxNameLen), branch, snap)
		}
		_ = tw.Flush()
	}
	_, err := w.Write(b.Bytes())
	return err
}

// setupNote is what krad groups says of a group's setup after its checkout: "" when it has none
// or it is done.
func setupNote(s *worktree.Setup) string {
	if s == nil {
		return ""
	}
	switch s.State {
	case worktree.SetupPending:
		return "  (setup pending: its first terminal runs it)"
	case worktree.SetupRunning:
		return "  (setting up, in " + termsafe.Escape(s.Terminal, 100) + ")"
	case worktree.SetupFailed:
		return "  (setup failed: " + termsafe.Escape(s.Why, 200) + ")"
	}
	return ""
}

// changesCommand is `krad changes [T]`: Changes.
func changesCommand() *command {
	var group *string
	var stat, binary bool
	var paths []string
	var maxPatch, maxFilePatch int
	return &command{
		name:    "changes",
		args:    "[T] [--group G] [--stat] [--paths P]… [--binary] [--json]",
		summary: "print what a group changed: its patch, or --stat",
		json:    `print {"group","base","head","commits","files","patch"}`,
		help: `
Prints what a group changed since its base commit (commits, staged, unstaged and untracked
files) as git diff prints it, so that it can be piped into git apply. The group is terminal T's,
or G (--group '' is the main checkout, against its HEAD), or this terminal's own.

The patch is capped (1 MiB unless --max-patch says more, up to 16 MiB; one file's own patch 256
KiB unless --max-file-patch says more), cut only between files; binary files, lockfiles and
generated files (linguist-generated in .gitattributes), and files too large for the caps are left
out of it, and krad says which on stderr: ask for them with --paths, or --binary. The list of files (--stat,
--json) is always complete.`,
		flags: func(fs *pflag.FlagSet) {
			fs.Var(stringPtrValue{&group}, "group", "the group `G` (by default T's, or this terminal's)")
			fs.BoolVar(&stat, "stat", false, "print the files and their line counts, as git diff --stat does")
			fs.StringArrayVar(&paths, "paths", nil, "put only the patch of file or folder `P` in (again for more)")
			fs.BoolVar(&binary, "binary", false, "put binary files in the patch, as git's binary patches")
			fs.IntVar(&maxPatch, "max-patch", 0, "cap the patch at `BYTES` (at most 16 MiB)")
			fs.IntVar(&maxFilePatch, "max-file-patch", 0, "cap one file's patch at `BYTES` (256 KiB by default)")
		},
		run: func(x *invocation, args []string) error {
			body := &api.ChangesBody{Stat: stat, Paths: paths, Binary: binary, MaxPatch: maxPatch, MaxFilePatch: maxFilePatch}
			switch len(args) {
			case 0:
			case 1:
				t, err := x.target(args[0])
				if err != nil {
					return err
				}
				body.Target = &t
			default:
				return x.usageError("%s takes one target, and %s is one too many", x.path, quote(args[1]))
			}
			if group != nil {
				if body.Target != nil {
					return x.usageError("name a target or --group, not both")
				}
				if *group != "" {
					if err := worktree.ValidName(*group); err != nil {
						return x.usageError("%s", strings.TrimPrefix(err.Error(), string(api.CodeBadRequest)+": "))
					}
				}
				body.Group = group
			}
			if maxPatch < 0 || maxPatch > api.MaxPatch || maxFilePatch < 0 || maxFilePatch > api.MaxPatch {
				return x.usageError("--max-patch and --max-file-patch must be from 0 to %d", api.MaxPatch)
			}
			b, err := x.bus()
			if err != nil {
				return err
			}
			_, err = printAnswer(x, b, api.NewRequest(api.Changes, body), func(c worktree.Changes) error {
				if stat {
					return writeStat(x.stdout, c.Files)
				}
				if _, err := io.WriteString(x.stdout, c.Patch); err != nil {
					return err
				}
				x.noteLeftOut(c.Files)
				return nil
			})
			return err
		},
	}
}

// noteLeftOut tells, on stderr, which files' patches are not in the patch printed, and how to
// get them.
func (x *invocation) noteLeftOut(files []worktree.File) {
	var out []string
	n := 0
	for _, f := range files {
		if f.LeftOut != "" && f.LeftOut != "not asked for" {
			out = append(out, f.Path+" ("+f.LeftOut+")") // warn escapes the whole line
		}
	}
	if n = len(out); n == 0 {
		return
	}
	more := ""
	if n > 10 {
		more = fmt.Sprintf(" and %d more", n-10)
		out = out[:10]
	}
	x.warn("%d %s not in the patch: %s%s; ask for them with --paths (and --binary for binary files), or see them all with --stat",
		n, plural(n, "file is", "files are"), strings.Join(out, ", "), more)
}

// writeStat writes files as git diff --stat does: each path, its count of changed lines and a bar
// of + and -, then the totals.
func writeStat(w io.Writer, files []worktree.File) error {
	if len(files) == 0 {
		return nil
	}
	const barWidth = 50
	names := make([]string, len(files))
	width, most, added, deleted := 0, 0, 0, 0
	for i, f := range files {
		names[i] = termsafe.Escape(f.Path, 1000)
		if f.OldPath != "" {
			names[i] = termsafe.Escape(f.OldPath, 1000) + " => " + names[i]
		}
		width = max(width, len(names[i]))
		most = max(most, f.Added+f.Deleted)
		added += f.Added
		deleted += f.Deleted
	}
	var b strings.Builder
	for i, f := range files {
		if f.Binary {
			fmt.Fprintf(&b, " %-*s | Bin\n", width, names[i])
			continue
		}
		n := f.Added + f.Deleted
		plus, minus := f.Added, f.Deleted
		if most > barWidth {
			plus, minus = scale(f.Added, most, barWidth), scale(f.Deleted, most, barWidth)
		}
		fmt.Fprintf(&b, " %-*s | %*d %s%s\n", width, names[i], len(strconv.Itoa(most)), n, strings.Repeat("+", plus), strings.Repeat("-", minus))
	}
	fmt.Fprintf(&b, " %d %s changed, %d insertion%s(+), %d deletion%s(-)\n", len(files), plural(len(files), "file", "files"),
		added, plural(added, "", "s"), deleted, plural(deleted, "", "s"))
	_, err := io.WriteString(w, b.String())
	return err
}

// scale is n of most in width columns, at least one column for a non-zero n.
func scale(n, most, width int) int {
	if n == 0 {
		return 0
	}
	return max(1, n*width/most)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// retireCommand is `krad retire G [--force]`: RetireGroup.
func retireCommand() *command {
	var force bool
	return &command{
		name:    "retire",
		args:    "G [--force] [--json]",
		summary: "retire group G now (with --force, a held one too)",
		json:    `print what was removed and kept, {"group","dir","removed",…}`,
		help: `
Retires group G of this environment now, as its last terminal closing would: its uncommitted
work is kept as a snapshot, its checkout removed, its branch kept unless it holds nothing. A
group with terminals in it is refused: close them, and it retires by itself.

A group whose checkout holds git data a snapshot cannot (a nested repository, a submodule with
unpushed work) is held instead, untouched; krad groups marks it held. --force removes such a
checkout anyway, the nested repositories with it: their commits are lost unless pushed first.`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&force, "force", false, "remove a held checkout too, with its nested repositories")
		},
		run: func(x *invocation, args []string) error {
			if len(args) != 1 {
				return x.usageError("%s takes one group name", x.path)
			}
			if err := worktree.ValidName(args[0]); err != nil {
				return x.usageError("%v", err)
			}
			b, err := x.bus()
			if err != nil {
				return err
			}
			_, err = printAnswer(x, b, api.NewRequest(api.RetireGroup, &api.RetireGroupBody{Group: args[0], Force: force}), func(r worktree.Retired) error {
				return writeLine(x.stdout, termsafe.Escape(retiredLine(r), 2000))
			})
			return err
		},
	}
}

// retiredLine says what a RetireGroup did.
func retiredLine(r worktree.Retired) string {
	if len(r.Held) > 0 {
		return fmt.Sprintf("group %s is held, nothing removed: its checkout %s keeps %s (a nested repository, or a submodule with unpushed work); push or move that work, or krad retire --force %s",
			r.Group, r.Dir, strings.Join(r.Held, ", "), r.Group)
	}
	s := "group " + r.Group + " retired: its checkout was removed"
	if !r.Removed {
		s = "group " + r.Group + " retired: its checkout was already gone"
	}
	if r.Snapshot != "" {
		s += "; its uncommitted work is kept on " + r.Snapshot
	}
	if r.BranchDeleted {
		return s + "; branch " + r.Branch + ", which held nothing, was deleted"
	}
	return s + "; branch " + r.Branch + " is kept (" + r.BranchKept + ")"
}
