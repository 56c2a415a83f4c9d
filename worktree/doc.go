// Package worktree does every git operation of groups: a group is a named git worktree of the
// repository an environment works in, made for agents, so that workers do not trample each
// other's files. The decisions behind it are in the design page on groups; in short:
//
//   - [Open] finds the repository that holds a folder and checks that the git found on PATH is
//     recent enough ([MinGitVersion]).
//   - [Repo.Create] makes a group: branch krad/<name> from a base resolved once to a commit (its
//     base_commit), checked out with `git worktree add --lock` into Root/<repo-key>/<name>. What
//     the app must remember sits in the worktree's own git admin folder, so that it survives
//     restarts and goes with the worktree. An existing group, branch or folder of that name is a
//     conflict; nothing is reused or deleted. A failure midway, a cancelled context included,
//     leaves nothing behind. Given an existing branch, it continues it instead; a branch kept
//     by a retired group comes back with that group's snapshot as uncommitted changes.
//   - [Repo.Groups] lists the groups from git's own admin data, not from a file of ours, and
//     [Repo.Kept] what retired groups left: their branches and snapshots.
//   - [Repo.Changes] is what a group changed since its base_commit, computed on a temporary
//     index so that the worker's own index is never touched: every file with its line counts, and
//     a patch `git apply` takes, cut only between files, within a total cap and a per-file cap;
//     binary files, lockfiles and generated files are listed, their patch left out unless asked
//     for.
//   - [Repo.Retire] keeps uncommitted work as a snapshot commit on refs/krad/snapshots/<name>,
//     then removes the worktree, then deletes the branch only when the app made it and it holds
//     nothing.
//   - A new group's checkout gets the ignored files the repository's [IncludeFile] and the
//     person's config ([SetupRule]) name, chosen by git, never through a symlink, capped; and the
//     config's setup command, which the group's first terminal runs ([RunSetup]) before its own.
//   - [Repo.Sync] brings a group's branch up to the main checkout's HEAD, merged or rebased,
//     computed off every checkout so that a conflict changes nothing; [Repo.Push] pushes it to
//     the repository's remote and may open a pull request with gh.
//
// # How git is run
//
// Always the git program, never a shell, with the variables that would redirect it (GIT_DIR,
// GIT_INDEX_FILE, …) removed from its environment, LC_ALL=C, and the repository's hooks off
// (core.hooksPath=/dev/null): a cloned repository must not run code of its own through the app.
// Commands that only read pass --no-optional-locks, so that they never race the agent working in
// the checkout. Every name from outside is checked first ([ValidName], [ValidRef]) and passed
// where nothing expands it: after "--", after --end-of-options, or as a full refs/heads/… ref.
//
// What this package does not guard against: a worker that deletes its own branch or rewrites
// history, or someone who edits .git by hand. It sees those and says so; it does not prevent them.
package worktree
