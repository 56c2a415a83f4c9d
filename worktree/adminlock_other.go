//go:build !unix

package worktree

// lockAdmin does nothing where there is no flock: groups are made on Unix hosts.
func (r *Repo) lockAdmin() (func(), error) { return func() {}, nil }
