package forward

import (
	"context"
	"testing"
)

// TestProbesShareTheHandshakeSlots: a probe of the path takes one of the address's handshake
// slots, and none while the handshakes under way hold them all, so that sshd never sees more
// than MaxStartups unauthenticated connections from this process; the address's entry goes
// with its last user.
func TestProbesShareTheHandshakeSlots(t *testing.T) {
	const addr = "192.0.2.1:22"
	var held []func()
	for range MaxStartups {
		release, err := startup(context.Background(), addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	if _, ok := tryStartup(addr); ok {
		t.Fatalf("a probe got a slot while %d handshakes held them all", MaxStartups)
	}
	held[0]()
	probe, ok := tryStartup(addr)
	if !ok {
		t.Fatal("a probe got no slot with one free")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := startup(ctx, addr); err == nil {
		t.Fatal("a handshake got a slot the probe held")
	}
	probe()
	probe() // a second release gives back nothing more
	for _, release := range held[1:] {
		release()
	}
	if n := startups.Keys(); n != 0 {
		t.Errorf("%d addresses' slots are still there after every release", n)
	}
}
