package api

import (
	"errors"
	"strings"
)

// A group's work leaves it through a sync (its branch brought up to the main checkout's HEAD) and
// a push (its branch sent to the repository's remote, and a pull request opened for it): krad's
// additions beside the spec's requests, as RetireGroup is.

// The ways a SyncGroup takes ("" is SyncMerge).
const (
	SyncMerge  = "merge"
	SyncRebase = "rebase"
)

// SyncGroupBody: bring group Group's branch up to the main checkout's HEAD, by How.
type SyncGroupBody struct {
	Group string `json:"group"`
	How   string `json:"how,omitempty"`
}

// CheckSyncHow says whether how is a way to sync ("" is SyncMerge): the one rule of it, which the
// bus applies to SyncGroup and package worktree to a sync operation.
func CheckSyncHow(how string) error {
	switch how {
	case "", SyncMerge, SyncRebase:
		return nil
	}
	return errors.New("how must be merge or rebase")
}

func validateSync(b *SyncGroupBody) error {
	if err := CheckSyncHow(b.How); err != nil {
		return err
	}
	if b.Group == "" {
		return errors.New("group names the group to sync: it is needed")
	}
	return nil
}

// PushGroupBody: push group Group's branch to the repository's remote (Remote, else its default),
// and with PR open a pull request for it (Title, else gh takes the commits'; Draft).
type PushGroupBody struct {
	Group  string `json:"group"`
	Remote string `json:"remote,omitempty"`
	PR     bool   `json:"pr,omitempty"`
	Title  string `json:"title,omitempty"`
	Draft  bool   `json:"draft,omitempty"`
}

// MaxPRTitle is the longest title a pull request may be given.
const MaxPRTitle = 256

func validatePush(b *PushGroupBody) error {
	if b.Group == "" {
		return errors.New("group names the group to push: it is needed")
	}
	if (b.Title != "" || b.Draft) && !b.PR {
		return errors.New("title and draft are a pull request's: they go with pr")
	}
	if err := CheckText("title", b.Title, MaxPRTitle); err != nil {
		return err
	}
	if strings.ContainsFunc(b.Remote, func(r rune) bool { return r <= ' ' || r == 0x7f }) || len(b.Remote) > 200 {
		return errors.New("remote names one of the repository's remotes: one word, at most 200 bytes")
	}
	return nil
}
