//go:build e2e

// Package scenarios_test runs the real app, the krad-ade program, as a user would, against
// OpenSSH hosts in Docker containers (package e2e): SSH environments from an ssh_config,
// remote terminals driven through the hosts' tmux, the static krad there, and a Client on this
// machine watching. Each scenario of issue 5 is a test here.
package scenarios_test

import (
	"testing"

	"github.com/krad-ade/krad/e2e"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// The subnets 172.29.N.0/24 this package's tests use (the package e2e's own use 21 to 26):
//
//	30, 31  TestAppConnectsThreeSSHEnvironments (outer, inner)
//	32, 33  TestRemoteTerminalsRunKradThroughTheTunnel (outer, inner)
//	34      TestLeadSpawnsAWorkerOnTheHost
//	35      TestForwardListensOnTheHostsLoopbackOnly
//	36      TestNetworkCutHealsOnTheSamePort
//	37      TestHostRestartReinstalls
//	38      TestChangedHostKeyIsRefused
//	39      TestHostsTheAppRefuses
//	40      TestSquattedPortGetsNoToken
//	41      TestAppStopsCleanlyAndComesBackAfterAKill
//	42      TestHelloLatencyThroughTheTunnel
//	43      TestOtherUsersListenersBesideTheForward
//	44      TestHostCannotActOnThisComputer
//	45      TestAnotherHostUserTakesTmuxsFolder
//	48      TestGroupsAndVariantsOnTheHost
//	49      TestExtensionFromAContainerHost
//	50      TestAppPreparesAnArm64Host
//	51      TestGitPushOverHTTPFromAContainerHost
//	52      TestGroupsOnAHostWithOldGit
//	55      TestGroupSetupFailsOnTheHost
//	56      TestGitPushOverSSHFromAContainerHost
//	57      TestPushAndPullRequestFromAContainerHost

func TestMain(m *testing.M) { e2e.Main(m, testbin.Cleanup, removeProbe) }
