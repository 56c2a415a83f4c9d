//go:build !unix

package worktree

import "context"

// lockAdmin does nothing where there is no flock: groups are made on Unix hosts.
func (r *Repo) lockAdmin(context.Context) (func(), error) { return func() {}, nil }

// checkoutSlot does nothing where there is no flock.
func (r *Repo) checkoutSlot(context.Context) (func(), error) { return func() {}, nil }
