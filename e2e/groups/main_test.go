//go:build e2e

// Package groups_test runs groups (git worktrees) on OpenSSH hosts in Docker containers
// (package e2e), through the bridge and the static krad it installs there, as the app does.
package groups_test

import (
	"testing"

	"github.com/krad-ade/krad/e2e"
)

// The subnets 172.29.N.0/24 this package's tests use (the package e2e's own use 21 to 26, the
// scenarios 30 to 45):
//
//	46  TestGroupsOnAnSSHHost
//	47  TestHostWithoutGit
//	53  TestIncludedFilesOnAnSSHHost
//	54  TestSyncOnAnSSHHost

func TestMain(m *testing.M) { e2e.Main(m) }
