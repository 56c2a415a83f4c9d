package api

import (
	"errors"
	"fmt"
)

// MaxVariants is the most workers one RunVariants starts.
const MaxVariants = 8

// The ways PickVariant takes a winner's work (PickVariantBody.How).
const (
	// PickSquash: one commit on the main checkout's branch (the default).
	PickSquash = "squash"
	// PickApply: the changes staged in the main checkout, not committed.
	PickApply = "apply"
	// PickMerge: a merge commit on the main checkout's branch.
	PickMerge = "merge"
	// PickBranch: nothing touched; the winner's branch is the result.
	PickBranch = "branch"
)

type (
	// RunVariantsBody: one task to several workers, each in its own group of one variant set,
	// all from one base commit. Agents says who runs it, and how many of each.
	RunVariantsBody struct {
		Title  string         `json:"title"`
		Prompt string         `json:"prompt"`
		Agents []VariantAgent `json:"agents"`
		Base   string         `json:"base,omitempty"`
	}
	// VariantAgent is Count workers of one agent profile, or of one command.
	VariantAgent struct {
		Agent   string   `json:"agent,omitempty"`
		Command []string `json:"command,omitempty"`
		Count   int      `json:"count"`
	}
	// PickVariantBody: the winner of a variant set, and how to take its work (How, PickSquash
	// when empty; Message, the commit's message for squash and merge).
	PickVariantBody struct {
		Group   string `json:"group"`
		How     string `json:"how,omitempty"`
		Message string `json:"message,omitempty"`
	}
)

// Variants is the answer to RunVariants: the set, its base commit, and each variant's group and
// worker.
type Variants struct {
	Set        string    `json:"set"`
	BaseCommit string    `json:"base_commit"`
	Variants   []Variant `json:"variants"`
}

// Variant is one variant of a set: its group and its worker.
type Variant struct {
	Group string `json:"group"`
	Agent Agent  `json:"agent"`
}

// Picked is the answer to PickVariant: what was taken, and what became of the others.
type Picked struct {
	Group string `json:"group"`
	How   string `json:"how"`
	// Commit is the commit made on Branch (squash, merge); "" for apply and branch.
	Commit string `json:"commit,omitempty"`
	// Branch is the main checkout's branch for squash and merge, the winner's for branch.
	Branch string `json:"branch,omitempty"`
	// Snapshot is the commit that holds the winner's whole state, uncommitted files included,
	// on refs/krad/snapshots/<group>.
	Snapshot string `json:"snapshot"`
	// Closed are the other variants' terminals, closed; their groups retired, their work kept.
	Closed []string `json:"closed"`
}

func validateVariants(b *RunVariantsBody) error {
	if b.Title == "" {
		return errors.New("a variant set needs a title")
	}
	if err := CheckTitle(b.Title); err != nil {
		return err
	}
	if err := checkTyped("prompt", b.Prompt); err != nil {
		return err
	}
	if len(b.Agents) == 0 {
		return errors.New("agents is empty: name at least one agent or command, with a count")
	}
	total := 0
	for i, a := range b.Agents {
		switch {
		case (a.Agent == "") == (len(a.Command) == 0):
			return fmt.Errorf("agents[%d] needs an agent or a command, not both", i)
		case a.Count < 1:
			return fmt.Errorf("agents[%d].count must be 1 or more", i)
		}
		for j, arg := range a.Command {
			if err := checkNUL(fmt.Sprintf("agents[%d].command[%d]", i, j), arg); err != nil {
				return err
			}
		}
		if err := checkNUL(fmt.Sprintf("agents[%d].agent", i), a.Agent); err != nil {
			return err
		}
		total += a.Count
	}
	if total > MaxVariants {
		return fmt.Errorf("%d variants: a set has at most %d", total, MaxVariants)
	}
	return nil
}

// CheckPickHow says whether how is a way to pick ("" is PickSquash): the one rule of it, which the
// bus applies to PickVariant and package worktree to a pick operation.
func CheckPickHow(how string) error {
	switch how {
	case "", PickSquash, PickApply, PickMerge, PickBranch:
		return nil
	}
	return errors.New("how must be squash, apply, merge or branch")
}

// CheckPickMessage says whether message may be a pick's commit message (CheckLines: tabs and
// newlines, no other control character): the one rule of it, which the bus applies to
// PickVariant and package worktree to a pick operation, before either runs anything.
func CheckPickMessage(message string) error {
	return CheckLines("message", message, MaxRequestLine)
}

func validatePick(b *PickVariantBody) error {
	if err := CheckPickHow(b.How); err != nil {
		return err
	}
	if b.Group == "" {
		return errors.New("group names the winner: it is needed")
	}
	return CheckPickMessage(b.Message)
}

func checkNUL(what, s string) error {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return fmt.Errorf("%s holds a NUL byte", what)
		}
	}
	return nil
}
