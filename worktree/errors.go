package worktree

import "errors"

// The errors callers branch on. Errors from this package wrap them, so test with [errors.Is];
// most also come as an *api.Error whose code (conflict, not_found, unavailable, bad_request)
// is the answer the bus gives.
var (
	// ErrBadName: a group name, branch or base that is not allowed ([ValidName], [ValidRef]).
	ErrBadName = errors.New("not a valid name")

	// ErrNotRepository: the folder is in no git repository (or only in a bare one, which has
	// no checkout to make worktrees of).
	ErrNotRepository = errors.New("not in a git repository")

	// ErrGit: git is missing or older than [MinGitVersion].
	ErrGit = errors.New("git is missing or too old")

	// ErrNoCommits: the repository has no commit yet, so there is nothing to base a group on.
	ErrNoCommits = errors.New("the repository has no commits yet")

	// ErrConflict: a group, branch, folder or ref of that name exists already. Nothing was
	// touched.
	ErrConflict = errors.New("already exists")

	// ErrNotFound: no such group, base or branch.
	ErrNotFound = errors.New("not found")

	// ErrDiskFull: a disk that Create writes to (the worktrees root's, or the repository's)
	// is full. What Create had made is undone.
	ErrDiskFull = errors.New("a disk is full")

	// ErrRetiring: the group is being retired, so its changes cannot be read whole.
	ErrRetiring = errors.New("the group is retiring")

	// ErrNoIdentity: a pick that commits (squash, merge) in a repository where git knows no
	// one to commit as (user.name, user.email). Nothing was done.
	ErrNoIdentity = errors.New("git has no identity to commit with")

	// ErrFolderGone: the group's worktree folder was deleted from under git (by its worker,
	// say). Its branch and commits are still in the repository.
	ErrFolderGone = errors.New("the group's folder is gone")
)
