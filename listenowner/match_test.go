package listenowner

import (
	"net/netip"
	"slices"
	"testing"
)

func listener(addr string, uid uint32) socket {
	a := ap(addr)
	remote := ap("0.0.0.0:0")
	if a.Addr().Is6() {
		remote = ap("[::]:0")
	}
	return socket{local: a, remote: remote, state: stateListen, uid: uid, inode: 100 + uint64(uid)}
}

func conn(local, remote string, uid uint32, inode uint64) socket {
	return socket{local: ap(local), remote: ap(remote), state: 1, uid: uid, inode: inode}
}

func TestServers(t *testing.T) {
	const me, other = 1000, 1001
	client4, server4 := "127.0.0.1:50000", "127.0.0.1:41877"
	client6, server6 := "[::1]:50000", "[::1]:41877"
	tests := []struct {
		name           string
		sockets        []socket
		client, server string
		want           []socket
	}{
		{name: "nothing listens", client: client4, server: server4,
			sockets: []socket{listener("127.0.0.1:41878", other), listener("0.0.0.0:22", 0)}},
		{name: "127.0.0.1", client: client4, server: server4,
			sockets: []socket{listener("127.0.0.1:41877", me)}, want: []socket{listener("127.0.0.1:41877", me)}},
		{name: "0.0.0.0", client: client4, server: server4,
			sockets: []socket{listener("0.0.0.0:41877", other)}, want: []socket{listener("0.0.0.0:41877", other)}},
		{name: "another loopback address does not serve 127.0.0.1", client: client4, server: server4,
			sockets: []socket{listener("127.0.0.2:41877", other)}},
		{name: "::ffff:127.0.0.1", client: client4, server: server4,
			sockets: []socket{listener("[::ffff:127.0.0.1]:41877", other)}, want: []socket{listener("[::ffff:127.0.0.1]:41877", other)}},
		{name: "[::] serves IPv4", client: client4, server: server4,
			sockets: []socket{listener("[::]:41877", other)}, want: []socket{listener("[::]:41877", other)}},
		{name: "[::1] does not serve IPv4", client: client4, server: server4,
			sockets: []socket{listener("[::1]:41877", other)}},
		{name: "the address before the wildcard", client: client4, server: server4,
			sockets: []socket{listener("0.0.0.0:41877", other), listener("127.0.0.1:41877", me), listener("[::]:41877", other)},
			want:    []socket{listener("127.0.0.1:41877", me)}},
		{name: "IPv4 before v4-mapped", client: client4, server: server4,
			sockets: []socket{listener("[::ffff:127.0.0.1]:41877", other), listener("127.0.0.1:41877", me)},
			want:    []socket{listener("127.0.0.1:41877", me)}},
		{name: "v4-mapped before the wildcard", client: client4, server: server4,
			sockets: []socket{listener("0.0.0.0:41877", other), listener("[::ffff:127.0.0.1]:41877", me)},
			want:    []socket{listener("[::ffff:127.0.0.1]:41877", me)}},
		{name: "0.0.0.0 before [::]", client: client4, server: server4,
			sockets: []socket{listener("[::]:41877", other), listener("0.0.0.0:41877", me)},
			want:    []socket{listener("0.0.0.0:41877", me)}},
		{name: "listeners that tie all come back", client: client4, server: server4,
			sockets: []socket{listener("127.0.0.1:41877", me), listener("127.0.0.1:41877", other)},
			want:    []socket{listener("127.0.0.1:41877", me), listener("127.0.0.1:41877", other)}},
		{name: "[::1]", client: client6, server: server6,
			sockets: []socket{listener("[::1]:41877", me)}, want: []socket{listener("[::1]:41877", me)}},
		{name: "[::1] before [::]", client: client6, server: server6,
			sockets: []socket{listener("[::]:41877", other), listener("[::1]:41877", me)}, want: []socket{listener("[::1]:41877", me)}},
		{name: "[::] serves [::1]", client: client6, server: server6,
			sockets: []socket{listener("[::]:41877", other)}, want: []socket{listener("[::]:41877", other)}},
		{name: "no IPv4 listener serves IPv6", client: client6, server: server6,
			sockets: []socket{listener("0.0.0.0:41877", other), listener("127.0.0.1:41877", other), listener("[::ffff:127.0.0.1]:41877", other)}},

		{name: "the accepted far end before the listener", client: client4, server: server4,
			sockets: []socket{listener("127.0.0.1:41877", me), conn(client4, server4, me, 7), conn(server4, client4, other, 8)},
			want:    []socket{conn(server4, client4, other, 8)}},
		{name: "a far end no process holds yet is the listener's", client: client4, server: server4,
			sockets: []socket{listener("127.0.0.1:41877", other), conn(client4, server4, me, 7), conn(server4, client4, 0, 0)},
			want:    []socket{listener("127.0.0.1:41877", other)}},
		{name: "our own end is not the far end", client: client4, server: server4,
			sockets: []socket{conn(client4, server4, me, 7), listener("127.0.0.1:41877", other)},
			want:    []socket{listener("127.0.0.1:41877", other)}},
		{name: "another connection's far end does not count", client: client4, server: server4,
			sockets: []socket{conn(server4, "127.0.0.1:50001", me, 9), listener("127.0.0.1:41877", other)},
			want:    []socket{listener("127.0.0.1:41877", other)}},
		{name: "a far end in tcp6, v4-mapped, accepted from [::]", client: client4, server: server4,
			sockets: []socket{listener("[::]:41877", me), conn("[::ffff:127.0.0.1]:41877", "[::ffff:127.0.0.1]:50000", other, 8)},
			want:    []socket{conn("[::ffff:127.0.0.1]:41877", "[::ffff:127.0.0.1]:50000", other, 8)}},
		{name: "the IPv6 far end", client: client6, server: server6,
			sockets: []socket{listener("[::1]:41877", me), conn(server6, client6, other, 8)},
			want:    []socket{conn(server6, client6, other, 8)}},
		{name: "a client that dialed ::ffff:127.0.0.1", client: "[::ffff:127.0.0.1]:50000", server: "[::ffff:127.0.0.1]:41877",
			sockets: []socket{listener("127.0.0.1:41877", me)}, want: []socket{listener("127.0.0.1:41877", me)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := servers(tt.sockets, ap(tt.client), ap(tt.server))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestListenRankPort: a listener on another port never serves, whatever its address.
func TestListenRankPort(t *testing.T) {
	for _, l := range []string{"127.0.0.1:1", "0.0.0.0:1", "[::ffff:127.0.0.1]:1", "[::]:1", "[::1]:1"} {
		for _, dst := range []netip.AddrPort{ap("127.0.0.1:2"), ap("[::1]:2")} {
			if r := listenRank(listener(l, 0), dst); r != 0 {
				t.Errorf("listener %s for %s: got rank %d, want 0", l, dst, r)
			}
		}
	}
}
