package cli

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/worktree"
)

// variantsCommand is `krad variants run|show|pick`: RunVariants, a look at a set, PickVariant.
func variantsCommand() *command {
	return &command{
		name:    "variants",
		summary: "run one task several ways at once, and pick the best",
		subs:    []*command{variantsRunCommand(), variantsShowCommand(), variantsPickCommand()},
	}
}

func variantsRunCommand() *command {
	var title, prompt, agents, base string
	var count int
	return &command{
		name:    "run",
		args:    "--title T --prompt P (--agents A:N,… | --count N -- CMD…) [--base REF] [--json]",
		summary: "start a variant set: one task to several workers, each in a group of its own",
		json:    "print the set as one JSON object",
		help: `
Starts one task several ways at once: each worker in a group of its own (a git worktree on a
branch of its own), all from one base commit, so that their patches compare. --agents names agent
profiles of config.toml with how many of each (claude:3,codex:2); or --count N runs N of the
command after --. At most 8 in all. The prompt P is given to each worker as its profile says
(typed in once it is ready, by default).

  set retry-backoff: 5 workers from 3f2a9c1 (main:2..main:6)

Then wait for them (krad wait 2 3 4 5 6), compare them (krad variants show SET, krad changes T
--stat) and pick the best (krad variants pick GROUP). Only a session's lead runs variants.`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&title, "title", "", "the task's title `T`: the set's name is made of it")
			fs.StringVar(&prompt, "prompt", "", "the task `P`, given to every worker")
			fs.StringVar(&agents, "agents", "", "agent profiles and how many of each, like `claude:3,codex:2`")
			fs.IntVar(&count, "count", 0, "run `N` workers of the command after --")
			fs.StringVar(&base, "base", "", "the commit `REF` every variant starts from (by default the main checkout's HEAD)")
		},
		run: func(x *invocation, args []string) error {
			body := &api.RunVariantsBody{Title: title, Prompt: prompt, Base: base}
			switch {
			case title == "":
				return x.usageError("%s needs --title", x.path)
			case agents != "" && (count > 0 || len(args) > 0):
				return x.usageError("give --agents, or --count with a command after --, not both")
			case agents != "":
				for _, part := range strings.Split(agents, ",") {
					name, n, ok := strings.Cut(part, ":")
					k, err := strconv.Atoi(n)
					if !ok || err != nil || name == "" || k < 1 {
						return x.usageError("--agents takes profiles and counts like claude:3,codex:2, not %s", quote(part))
					}
					body.Agents = append(body.Agents, api.VariantAgent{Agent: name, Count: k})
				}
			case count > 0 && len(args) > 0:
				body.Agents = []api.VariantAgent{{Command: args, Count: count}}
			default:
				return x.usageError("%s needs --agents A:N,…, or --count N and a command after --", x.path)
			}
			b, err := x.bus()
			if err != nil {
				return err
			}
			_, err = printAnswer(x, b, api.NewRequest(api.RunVariants, body), func(v api.Variants) error {
				return writeLine(x.stdout, variantsLine(v))
			})
			return err
		},
	}
}

func variantsShowCommand() *command {
	return &command{
		name:    "show",
		args:    "SET",
		summary: "compare a set's variants: state, exit code, files, lines",
		help: `
Shows each variant of set SET: its group, its worker's terminal and state (with its exit code),
and what it changed: how many files, lines added and deleted.`,
		run: func(x *invocation, args []string) error {
			if len(args) != 1 {
				return x.usageError("%s takes one set's name", x.path)
			}
			set := args[0]
			b, err := x.bus()
			if err != nil {
				return err
			}
			var l worktree.List
			if _, err := b.answer(x.ctx, api.NewRequest(api.Groups, nil), &l); err != nil {
				return err
			}
			var agents []api.Agent
			if _, err := b.answer(x.ctx, api.NewRequest(api.ListAll, nil), &agents); err != nil {
				return err
			}
			var out bytes.Buffer
			tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "VARIANT\tTERMINAL\tSTATE\tFILES\t+\t-\tPICKED")
			found := 0
			for _, g := range l.Groups {
				if g.Set != set {
					continue
				}
				found++
				term, state := "-", "retired"
				for _, a := range agents {
					if a.Group == g.Name {
						term, state = agentID(a), agentState(a)
					}
				}
				name := g.Name
				var c worktree.Changes
				files, added, deleted := "?", "?", "?"
				if _, err := b.answer(x.ctx, api.NewRequest(api.Changes, &api.ChangesBody{Group: &name, Stat: true}), &c); err == nil {
					files = strconv.Itoa(len(c.Files))
					a, d := 0, 0
					for _, f := range c.Files {
						a, d = a+f.Added, d+f.Deleted
					}
					added, deleted = strconv.Itoa(a), strconv.Itoa(d)
				}
				picked := "-"
				if g.Picked != "" {
					picked = termsafe.Escape(g.Picked, 60)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", termsafe.Escape(g.Name, worktree.MaxNameLen), term, state, files, added, deleted, picked)
			}
			_ = tw.Flush()
			if found == 0 {
				return &problem{err: fmt.Errorf("no variant set %s in this environment", quote(set)), hint: "krad groups lists the groups, with their sets"}
			}
			_, err = x.stdout.Write(out.Bytes())
			return err
		},
	}
}

func variantsPickCommand() *command {
	var how, message, title string
	var pr, draft bool
	return &command{
		name:    "pick",
		args:    "GROUP [--how squash|apply|merge|branch] [--message M] [--pr [--title T] [--draft]] [--json]",
		summary: "take a variant's work, close the others",
		json:    "print what was done as one JSON object",
		help: `
Takes the work of variant GROUP, which must have settled (krad wait it first): its whole state,
uncommitted files included, is kept as a snapshot first; then, computed off every checkout:

  squash  one commit on the main checkout's branch (the default), with message M
  apply   the changes staged in the main checkout, not committed
  merge   a merge commit on the main checkout's branch
  branch  nothing touched: the variant's branch is the result

A pick that conflicts with the main branch changes nothing and names the files. So does a pick
refused for what it would lose or could not do: staged changes in the main checkout (nothing is
stashed); anything of the main checkout's that it would write over (a change not committed, an
ignored or untracked file, a folder or a symbolic link in its way), named; for squash and merge,
a repository where git has no identity to commit with (user.name, user.email). M is lines of
text: a control character other than tab and newline is refused. The other variants' workers are
closed, and their groups retire with their work kept. Only the lead that ran the set picks.

With --pr the winner's branch is the result (--how branch, the main checkout untouched), and it
is pushed and a pull request opened for it, as krad pr GROUP does (--title, --draft): the pick
first, so that a variant not settled pushes nothing. What the winner has not committed is not in
the pull request, and krad says how many files.`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&how, "how", "", "squash (default), apply, merge or branch")
			fs.StringVar(&message, "message", "", "the commit's message `M` (squash, merge)")
			fs.BoolVar(&pr, "pr", false, "push the winner's branch and open a pull request for it")
			fs.StringVar(&title, "title", "", "with --pr, the pull request's title `T`")
			fs.BoolVar(&draft, "draft", false, "with --pr, open it as a draft")
		},
		run: func(x *invocation, args []string) error {
			if len(args) != 1 {
				return x.usageError("%s takes one variant's group", x.path)
			}
			switch how {
			case "", api.PickSquash, api.PickApply, api.PickMerge, api.PickBranch:
			default:
				return x.usageError("--how is squash, apply, merge or branch, not %s", quote(how))
			}
			if err := api.CheckPickMessage(message); err != nil {
				return x.usageError("--%w", err) // "message holds …": the flag's name
			}
			switch {
			case pr && how != "" && how != api.PickBranch:
				return x.usageError("--pr makes the winner's branch the result: it goes with --how branch (its default), not %s", quote(how))
			case pr:
				how = api.PickBranch
			case title != "" || draft:
				return x.usageError("--title and --draft are the pull request's: they go with --pr")
			}
			if err := api.CheckText("--title", title, api.MaxPRTitle); err != nil {
				return x.usageError("%v", err)
			}
			b, err := x.bus()
			if err != nil {
				return err
			}
			if !pr {
				_, err = printAnswer(x, b, api.NewRequest(api.PickVariant, &api.PickVariantBody{Group: args[0], How: how, Message: message}), func(p api.Picked) error {
					return writeLine(x.stdout, pickedLine(p))
				})
				return err
			}
			var p api.Picked
			raw, err := b.answer(x.ctx, api.NewRequest(api.PickVariant, &api.PickVariantBody{Group: args[0], How: how, Message: message}), &p)
			if err != nil {
				return err
			}
			if !x.json {
				if err := writeLine(x.stdout, pickedLine(p)); err != nil {
					return err
				}
			}
			var pushed worktree.Pushed
			praw, err := b.answer(x.ctx, api.NewRequest(api.PushGroup, &api.PushGroupBody{Group: args[0], PR: true, Title: title, Draft: draft}), &pushed)
			if err != nil {
				return fmt.Errorf("picked %s, but not pushed (krad pr %s pushes it once mended): %w", args[0], args[0], err)
			}
			if x.json {
				return writeRaw(x.stdout, []byte(`{"picked":`+string(raw)+`,"pushed":`+string(praw)+`}`))
			}
			x.notePushed(pushed)
			return writeLine(x.stdout, pushedLine(pushed))
		},
	}
}

// variantsLine is a set just run, on one line: "set retry-backoff: 5 workers from 3f2a9c1
// (main:2..main:6)".
func variantsLine(v api.Variants) string {
	ids := ""
	if n := len(v.Variants); n > 0 {
		ids = " (" + agentID(v.Variants[0].Agent)
		if n > 1 {
			ids += ".." + agentID(v.Variants[n-1].Agent)
		}
		ids += ")"
	}
	return fmt.Sprintf("set %s: %d workers from %s%s", termsafe.Escape(v.Set, worktree.MaxNameLen),
		len(v.Variants), short(v.BaseCommit), ids)
}

// pickedLine is a pick on one line: what was taken, how, and what became of the others.
func pickedLine(p api.Picked) string {
	what := termsafe.Escape(p.How, 10)
	if p.Commit != "" {
		what += " → " + short(p.Commit) + " on " + termsafe.Escape(p.Branch, 200)
	}
	return fmt.Sprintf("picked %s (%s); closed %d other terminals; their groups retired with their work kept",
		termsafe.Escape(p.Group, worktree.MaxNameLen), what, len(p.Closed))
}
