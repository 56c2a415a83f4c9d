package worktree

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// Op is one group operation as the app asks for it: of this package directly for this computer,
// and of the static krad it installed on an SSH host (`krad-ade-agents worktree`, the Op as JSON
// on stdin, the Result as JSON on stdout, one SSH exec), so that a host does exactly what this
// computer does. [Do] runs it.
type Op struct {
	// Op is what to do: OpCreate, OpChanges, OpGroups or OpRetire.
	Op string `json:"op"`
	// Dir is the environment's folder: the repository is the one that holds it.
	Dir string `json:"dir"`
	// Env is the environment's name: the groups OpCreate and OpCreateSet make record it
	// (Group.Env), so that two environments in one repository (two Host aliases of one host,
	// say) can tell their groups apart.
	Env string `json:"env,omitempty"`
	// Root is the worktrees root (CreateOptions.Root), absolute.
	Root string `json:"root,omitempty"`
	// Create is OpCreate's options. Its Name "" picks a free name from Hint.
	Create *CreateOptions `json:"create,omitempty"`
	// Hint is what a picked name is made from (a worker's title): "" gives "group".
	Hint string `json:"hint,omitempty"`
	// Join, for OpCreate with a Name: a group of that name is the answer, rather than a
	// conflict (a Spawn into a group joins it; CreateWorktree never does).
	Join bool `json:"join,omitempty"`
	// Group is the group of OpChanges ("" the main checkout) and OpRetire.
	Group string `json:"group,omitempty"`
	// Force, for OpRetire: retire a held group too (Group.Held), its nested repositories'
	// folders with it: only when the person asks.
	Force bool `json:"force,omitempty"`
	// Auto, for OpRetire: the app retires the group by itself (its last terminal closed), not
	// the person: a group whose setup failed is then kept, for the person to look at (conflict,
	// saying so).
	Auto bool `json:"auto,omitempty"`
	// Changes is OpChanges's options.
	Changes *ChangesOptions `json:"changes,omitempty"`
	// Set is OpCreateSet's options (its name is made from Hint).
	Set *SetOptions `json:"set,omitempty"`
	// Pick is OpPick's options.
	Pick *PickOptions `json:"pick,omitempty"`
	// Sync is OpSync's options.
	Sync *SyncOptions `json:"sync,omitempty"`
	// Push is OpPush's options.
	Push *PushOptions `json:"push,omitempty"`
	// Resolve is OpResolve's options.
	Resolve *ResolveOptions `json:"resolve,omitempty"`
	// Setups are the person's [[setup]] rules for the environment, in config.toml's order: the
	// first that matches the repository says what the groups OpCreate and OpCreateSet make get
	// (SetupRule). None: a new checkout gets only what the repository's IncludeFile names.
	Setups []SetupRule `json:"setups,omitempty"`
	// AskpassKey is the askpass key of the app's own gits in the environment
	// (api.VarAskpassKey), for the prompts of the operation's gits: it travels on the verb's
	// stdin, never on a command line. It is never logged.
	AskpassKey string `json:"askpass_key,omitempty"`
}

// The operations of an Op.
const (
	OpCreate  = "create"
	OpChanges = "changes"
	OpGroups  = "groups"
	OpRetire  = "retire"
	// OpCreateSet makes a variant set's groups, all or nothing.
	OpCreateSet = "create-set"
	// OpPick takes a variant's work into the main checkout.
	OpPick = "pick"
	// OpSync brings a group's branch up to the main checkout's HEAD.
	OpSync = "sync"
	// OpPush pushes a group's branch to the repository's remote, and may open a pull request.
	OpPush = "push"
)

// Result is what an Op did: one of its fields, or Error.
type Result struct {
	Group    *Group     `json:"group,omitempty"`
	Joined   bool       `json:"joined,omitempty"` // Group existed: a Join found it
	List     *List      `json:"list,omitempty"`
	Changes  *Changes   `json:"changes,omitempty"`
	Retired  *Retired   `json:"retired,omitempty"`
	Set      *Set       `json:"set,omitempty"`
	Picked   *Pick      `json:"picked,omitempty"`
	Resolved *Resolved  `json:"resolved,omitempty"`
	Synced   *Synced    `json:"synced,omitempty"`
	Pushed   *Pushed    `json:"pushed,omitempty"`
	Error    *api.Error `json:"error,omitempty"`
}

// List is the answer to the Groups request: the repository's groups and what retired groups kept.
type List struct {
	// Top is the main checkout's folder.
	Top    string  `json:"top"`
	Groups []Group `json:"groups"`
	Kept   []Kept  `json:"kept"`
}

// Err is the Result's error, or nil.
func (r Result) Err() error {
	if r.Error != nil {
		return r.Error
	}
	return nil
}

// Do runs op. Every error is in the Result, as the *api.Error the bus answers: this package's own
// keep their code; any other (git failing in a way this package does not know) is internal,
// with its message.
func Do(ctx context.Context, op Op) Result {
	res, err := do(ctx, op)
	if err != nil {
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Error() != err.Error() {
			code, reason := api.CodeInternal, api.ErrorReason("")
			if ae != nil {
				code, reason = ae.Code, ae.Reason
			}
			ae = api.Errorf(code, "%s", err.Error()).WithCause(err).WithReason(reason)
		}
		return Result{Error: ae}
	}
	return res
}

func do(ctx context.Context, op Op) (Result, error) {
	if op.Op == OpResolve { // no repository: resolve.go
		return resolveOp(op)
	}
	switch op.Op {
	case OpCreate, OpChanges, OpGroups, OpRetire, OpCreateSet, OpSync, OpPush:
	case OpPick:
		// Checked as the bus checks PickVariant, before anything runs.
		if op.Pick == nil {
			return Result{}, api.Errorf(api.CodeBadRequest, "a pick operation needs its pick")
		}
		if err := api.CheckPickHow(op.Pick.How); err != nil {
			return Result{}, api.Errorf(api.CodeBadRequest, "pick %s: %s, not %s", termsafe.QuoteMax(op.Pick.Group, 60), err, termsafe.QuoteMax(op.Pick.How, 40))
		}
		if err := api.CheckPickMessage(op.Pick.Message); err != nil {
			return Result{}, api.Errorf(api.CodeBadRequest, "pick %s: %s", termsafe.QuoteMax(op.Pick.Group, 60), err)
		}
	default:
		return Result{}, api.Errorf(api.CodeBadRequest, "unknown group operation %q", op.Op)
	}
	r, err := Open(ctx, op.Dir)
	if err != nil {
		return Result{}, err
	}
	r.rules = op.Setups
	switch op.Op {
	case OpCreate:
		var o CreateOptions
		if op.Create != nil {
			o = *op.Create
		}
		o.Root, o.Env = op.Root, op.Env
		return r.create(ctx, o, op.Hint, op.Join)
	case OpChanges:
		var o ChangesOptions
		if op.Changes != nil {
			o = *op.Changes
		}
		c, err := r.Changes(ctx, op.Group, o)
		if err != nil {
			return Result{}, err
		}
		return Result{Changes: &c}, nil
	case OpGroups:
		gs, err := r.Groups(ctx)
		if err != nil {
			return Result{}, err
		}
		kept, err := r.Kept(ctx)
		if err != nil {
			return Result{}, err
		}
		l := List{Top: r.Top, Groups: gs, Kept: kept}
		if l.Groups == nil {
			l.Groups = []Group{}
		}
		if l.Kept == nil {
			l.Kept = []Kept{}
		}
		return Result{List: &l}, nil
	case OpCreateSet:
		if op.Set == nil {
			return Result{}, api.Errorf(api.CodeBadRequest, "a create-set operation needs its set")
		}
		o := *op.Set
		o.Env = op.Env
		set, err := r.CreateSet(ctx, op.Hint, op.Root, o)
		if err != nil {
			return Result{}, err
		}
		return Result{Set: &set}, nil
	case OpPick:
		p, err := r.Pick(ctx, *op.Pick)
		if err != nil {
			return Result{}, err
		}
		return Result{Picked: &p}, nil
	case OpSync:
		if op.Sync == nil {
			return Result{}, api.Errorf(api.CodeBadRequest, "a sync operation needs its sync")
		}
		s, err := r.Sync(ctx, *op.Sync)
		if err != nil {
			return Result{}, err
		}
		return Result{Synced: &s}, nil
	case OpPush:
		if op.Push == nil {
			return Result{}, api.Errorf(api.CodeBadRequest, "a push operation needs its push")
		}
		p, err := r.Push(ctx, *op.Push)
		if err != nil {
			return Result{}, err
		}
		return Result{Pushed: &p}, nil
	default: // OpRetire
		if op.Auto {
			if g, err := r.group(ctx, op.Group); err == nil && g.Setup != nil && g.Setup.State == SetupFailed {
				return Result{}, conflict("group %s's setup failed (%s): it is kept for you to look at, in %s; retire it with krad retire %s",
					g.Name, g.Setup.Why, termsafe.Quote(g.Dir), g.Name)
			}
		}
		retire := r.Retire
		if op.Force {
			retire = r.RetireForce
		}
		ret, err := retire(ctx, op.Group)
		if err != nil {
			return Result{}, err
		}
		return Result{Retired: &ret}, nil
	}
}

// create makes the group o names, or with Name "" the first free name made from hint; with join,
// a group of o.Name is the answer.
func (r *Repo) create(ctx context.Context, o CreateOptions, hint string, join bool) (Result, error) {
	if o.Name != "" {
		if join {
			g, err := r.group(ctx, o.Name)
			if err == nil && g.Env != "" && o.Env != "" && g.Env != o.Env {
				// Its own environment retires it when its last terminal there closes, and would
				// take the checkout from under this one's.
				return Result{}, conflict("group %s is environment %s's, whose terminals work in it: a terminal of %s cannot join it; name another group",
					o.Name, termsafe.Quote(g.Env), termsafe.Quote(o.Env))
			}
			if err == nil {
				if (!g.Joined || len(g.Held) > 0) && !g.Missing {
					// The record says a terminal joined, in the same operation: no other round
					// trip to a host. A held group is worked in again: the next retire looks
					// anew for what holds it.
					g.Joined, g.Held = true, nil
					if err := r.writeMeta(g); err != nil {
						return Result{}, fmt.Errorf("group %s: record that a terminal joins it: %w", o.Name, err)
					}
				}
				return Result{Group: &g, Joined: true}, nil
			}
			if !errors.Is(err, ErrNotFound) {
				return Result{}, err
			}
			o.joined = true
		}
		g, err := r.Create(ctx, o)
		if err != nil {
			return Result{}, err
		}
		return Result{Group: &g}, nil
	}
	stem := NameFrom(hint)
	for i := 1; i <= maxPicks; i++ {
		o.Name = stem
		if i > 1 {
			o.Name = stem + "-" + strconv.Itoa(i)
		}
		g, err := r.Create(ctx, o)
		if err == nil {
			return Result{Group: &g}, nil
		}
		if !errors.Is(err, ErrConflict) {
			return Result{}, err
		}
	}
	return Result{}, conflict("groups %s to %s-%d are all taken: name the group", stem, stem, maxPicks)
}

// maxPicks is how many names Create tries when it picks one.
const maxPicks = 20

// NameFrom makes a group name of hint (a title): lower case, a-z and 0-9 kept, every other run of
// characters one -, at most 32 characters (room for a -NN after it); "group" when nothing is
// left.
func NameFrom(hint string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(hint) {
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(c)
		default:
			dash = true
		}
		if b.Len() >= 32 {
			break
		}
	}
	name := strings.TrimRight(b.String(), "-")
	if len(name) > 32 {
		name = strings.TrimRight(name[:32], "-")
	}
	if name == "" {
		return "group"
	}
	if ValidName(name) != nil {
		panic(fmt.Sprintf("worktree: NameFrom made the invalid name %q", name))
	}
	return name
}
