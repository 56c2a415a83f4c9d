package forward

import (
	"testing"
	"time"

	"github.com/krad-ade/krad/remote/sshdtest"
)

// BenchmarkConnect is a connection's start, from Run to Connected (the handshake, the host's
// shell, the forward and its check), to an sshd on loopback and to one behind a bastion
// (ProxyJump); beside the baseline, the same connects with delayed acknowledgements (quickAck
// off, as before quickack_linux.go), alternating in the same run:
//
//	go test -run '^$' -bench Connect -benchtime 20x ./forward
func BenchmarkConnect(b *testing.B) {
	for _, jump := range []bool{false, true} {
		name := "direct"
		if jump {
			name = "bastion"
		}
		b.Run(name, func(b *testing.B) {
			e := newEnv(b)
			auth := sshdtest.Options{AuthorizedKeys: []string{e.key + ".pub"}}
			target := sshdtest.Start(b, auth)
			if jump {
				bastion := sshdtest.Start(b, auth)
				e.trust(target.KnownHostsLine(0), bastion.KnownHostsLine(0))
				e.writeConfig(hostBlock("bastion", bastion), hostBlock("target", target, "ProxyJump bastion"))
			} else {
				e.trust(target.KnownHostsLine(0))
				e.writeConfig(hostBlock("target", target))
			}
			connect := func() time.Duration {
				began := time.Now()
				r := run(b, e.cfg("target"))
				r.connected(0)
				took := time.Since(began)
				r.stop()
				return took
			}
			defer func() { quickAck = true }()
			var quick, delayed []time.Duration
			for range b.N {
				quickAck = true
				quick = append(quick, connect())
				quickAck = false
				delayed = append(delayed, connect())
			}
			reportDurations(b, "connect", quick)
			reportDurations(b, "delayed-acks-connect", delayed)
		})
	}
}
