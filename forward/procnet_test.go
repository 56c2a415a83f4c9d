package forward

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// procNetTCP is /proc/net/tcp and /proc/net/tcp6 as a Linux host prints them, after a line of
// shell start-up noise.
const procNetTCP = `Welcome to buildbox!
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:B355 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 40238856 1 0000000000000000 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1060 1 0000000000000000 100 0 0 10 0
   2: 0100007F:B085 0100007F:E826 01 00000000:00000000 03:00000B1C 00000000     0        0 0 3 0000000000000000
   3: 0200007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 77 1 0000000000000000 100 0 0 10 0
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:B355 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 40238857 1 0000000000000000 100 0 0 10 0 0
   1: 00000000000000000000000001000000:0277 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 555 1 0000000000000000 100 0 0 10 0 0
   2: 0000000000000000FFFF00000100007F:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 556 1 0000000000000000 100 0 0 10 0 0
   9: garbage line
`

func TestParseProcNetTCP(t *testing.T) {
	any4, any6 := netip.MustParseAddrPort("0.0.0.0:0"), netip.MustParseAddrPort("[::]:0")
	got := parseProcNetTCP([]byte(procNetTCP))
	want := []socket{
		{Local: netip.MustParseAddrPort("127.0.0.1:45909"), Remote: any4, State: tcpListen, UID: 1000, Inode: 40238856},
		{Local: netip.MustParseAddrPort("0.0.0.0:22"), Remote: any4, State: tcpListen, UID: 0, Inode: 1060},
		{Local: netip.MustParseAddrPort("127.0.0.1:45189"), Remote: netip.MustParseAddrPort("127.0.0.1:59430"), State: 1, UID: 0, Inode: 0},
		{Local: netip.MustParseAddrPort("127.0.0.2:8080"), Remote: any4, State: tcpListen, UID: 0, Inode: 77},
		{Local: netip.MustParseAddrPort("[::]:45909"), Remote: any6, State: tcpListen, UID: 1000, Inode: 40238857},
		{Local: netip.MustParseAddrPort("[::1]:631"), Remote: any6, State: tcpListen, UID: 0, Inode: 555},
		{Local: netip.MustParseAddrPort("[::ffff:127.0.0.1]:8081"), Remote: any6, State: tcpListen, UID: 0, Inode: 556},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseProcNetTCP:\n got %+v\nwant %+v", got, want)
	}
}

func TestCheckLoopback(t *testing.T) {
	socks := parseProcNetTCP([]byte(procNetTCP))
	for _, tc := range []struct {
		port int
		uid  uint32
		want error
		says string
	}{
		{port: 45909, uid: 1000, want: ErrNotLoopback, says: "GatewayPorts"}, // 127.0.0.1 and [::]
		{port: 22, uid: 0, want: ErrNotLoopback, says: "0.0.0.0:22"},
		{port: 22, uid: 1000, want: ErrUncheckable, says: "no listener of our sshd session"}, // root's
		{port: 8080, uid: 0, want: nil},                                                      // 127.0.0.2 is loopback too
		{port: 8081, uid: 0, want: nil},                                                      // ::ffff:127.0.0.1
		{port: 631, uid: 0, want: nil},                                                       // ::1
		{port: 45189, uid: 0, want: ErrUncheckable, says: "no listener"},                     // not listening
		{port: 1, uid: 0, want: ErrUncheckable},
	} {
		err := checkLoopback(socks, tc.port, tc.uid, nil)
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("checkLoopback(port %d, uid %d) = %v, want %v", tc.port, tc.uid, err, tc.want)
			continue
		}
		if tc.says != "" && !strings.Contains(err.Error(), tc.says) {
			t.Errorf("checkLoopback(port %d, uid %d) = %q, want it to say %q", tc.port, tc.uid, err, tc.says)
		}
	}
}

// Other listeners on the forward's port, beside ours on 127.0.0.1, are not ours to judge:
// another user's on [::] (IPv6 only) or on the host's LAN address, or, when the session's
// descriptors can be read, a socket of our user's that the session does not hold.
func TestCheckLoopbackOthers(t *testing.T) {
	const tcp = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:B355 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 101 1 0000000000000000 100 0 0 10 0
   1: 0200000A:B355 00000000:0000 0A 00000000:00000000 00:00000000 00000000 65534        0 102 1 0000000000000000 100 0 0 10 0
   2: 0300000A:B355 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 104 1 0000000000000000 100 0 0 10 0
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:B355 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 65534        0 103 1 0000000000000000 100 0 0 10 0 0
`
	socks := parseProcNetTCP([]byte(tcp))
	fds := parseFDs([]byte(`total 0
lr-x------ 1 u u 64 Dec  1 13:09 0 -> /dev/null
lrwx------ 1 u u 64 Dec  1 13:09 3 -> socket:[100]
lrwx------ 1 u u 64 Dec  1 13:09 9 -> socket:[101]
`))
	if err := checkLoopback(socks, 45909, 1000, fds); err != nil {
		t.Errorf("with the session's descriptors: %v, want nil", err)
	}
	own, others := ownListeners(socks, 45909, 1000, fds)
	if len(own) != 1 || own[0].Inode != 101 || len(others) != 3 {
		t.Errorf("ownListeners = %+v, %+v; want inode 101, and 3 others", own, others)
	}
	// Without them, 10.0.0.3 is ours as far as anyone can tell: the sshd may have GatewayPorts
	// yes.
	if err := checkLoopback(socks, 45909, 1000, nil); !errors.Is(err, ErrNotLoopback) || !strings.Contains(err.Error(), "10.0.0.3:45909") {
		t.Errorf("without the session's descriptors: %v, want ErrNotLoopback for 10.0.0.3", err)
	}
	// Another user's sockets never count.
	if err := checkLoopback(socks[:2], 45909, 1000, nil); err != nil {
		t.Errorf("beside another user's listener on 10.0.0.2: %v, want nil", err)
	}
	if err := checkLoopback(append(socks[:1:1], socks[3]), 45909, 1000, nil); err != nil {
		t.Errorf("beside another user's listener on [::]: %v, want nil", err)
	}
}

func TestParseFDs(t *testing.T) {
	got := parseFDs([]byte("total 0\nlrwx------ 1 u u 64 Dec  1 13:09 3 -> socket:[40238856]\r\n" +
		"lrwx------ 1 u u 64 Dec  1 13:09 4 -> socket:[7]\nl 5 -> socket:[x]\nl 6 -> socket:[8\nl 7 -> /dev/null\n"))
	if want := (inodes{40238856: true, 7: true}); !reflect.DeepEqual(got, want) {
		t.Errorf("parseFDs = %v, want %v", got, want)
	}
	if got := parseFDs([]byte("ls: cannot open directory '/proc/1/fd': Permission denied\n")); got != nil {
		t.Errorf("parseFDs of an unreadable folder = %v, want nil", got)
	}
}

func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want procStat
		err  bool
	}{
		{in: "18610 (sshd) S 18551 18610 18610 0 -1 4194560 1043 0 0 0 2 1 0 0 20 0 1 0 40123456 16003072 2302 18446744073709551615\n",
			want: procStat{Comm: "sshd", Start: 40123456}},
		{in: "77 (a ) b (c)) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 99 0 0",
			want: procStat{Comm: "a ) b (c)", Start: 99}},
		{in: "", err: true},
		{in: "1 (sshd S 1 2", err: true},
		{in: "1 (sshd) S 1 2 3", err: true},
		{in: "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 -5", err: true},
	} {
		got, err := parseProcStat([]byte(tc.in))
		if tc.err {
			if err == nil {
				t.Errorf("parseProcStat(%q) = %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseProcStat(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestSections(t *testing.T) {
	out := "motd: hello\nkrad-forward:pid\n123\nkrad-forward:tcp\na\nb\nkrad-forward:end\n"
	got := sections([]byte(out))
	want := map[string][]byte{"pid": []byte("123\n"), "tcp": []byte("a\nb\n"), "end": {}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sections = %q, want %q", got, want)
	}
}
