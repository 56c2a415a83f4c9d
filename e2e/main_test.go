//go:build e2e

package e2e_test

import (
	"testing"

	"github.com/krad-ade/krad/e2e"
)

// The subnets 172.29.N.0/24 this package's tests use, so that they can run in parallel:
//
//	21, 22  TestSSHReachesHostsAndTheHostBehindTheBastion (outer, inner)
//	23      TestRemoteForwardOnTheHostVariants
//	24      TestNetworkDisconnectKeepsTheHost
//	25      TestStaticKradRunsOnHost
//	26      TestRestartAndReplace
//
// Other test packages under e2e/ take numbers from 30 up.

func TestMain(m *testing.M) { e2e.Main(m) }
