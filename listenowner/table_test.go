package listenowner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// Lines captured from Linux 6.18 on amd64 (little-endian), as the kernel prints them.
const (
	capturedListen4   = "   1: 0100007F:8B8B 00000000:0000 0A 00000000:00000001 00:00000000 00000000 65534        0 40271939 2 00000000e2141828 100 0 0 10 0"
	capturedWildcard4 = "   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1060 1 00000000e9f0493f 100 0 0 10 0                      "
	capturedClient4   = " 365: 0100007F:E8D6 0100007F:8B8B 01 00000000:00000000 00:00000000 00000000 65534        0 40271940 2 0000000009fbb296 20 0 0 10 -1"
	capturedQueued4   = "5318: 0100007F:8B8B 0100007F:E8D6 01 00000000:00000000 00:00000000 00000000 65534        0 0 1 000000003d6d3039 20 0 0 10 -1"
	capturedAccepted4 = "5318: 0100007F:8B8B 0100007F:E8D6 01 00000000:00000000 00:00000000 00000000 65534        0 40271942 1 000000003d6d3039 20 0 0 10 -1"
	capturedTimeWait4 = "   1: 0100007F:8E61 0100007F:ED12 06 00000000:00000000 03:00000C46 00000000     0        0 0 3 00000000a7ce4b70"
	capturedLoopback6 = "   1: 00000000000000000000000001000000:8E2B 00000000000000000000000000000000:0000 0A 00000000:00000001 00:00000000 00000000     0        0 40270696 2 0000000080bb7aa9 100 0 0 10 0"
	capturedWildcard6 = "   0: 00000000000000000000000000000000:A033 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 40270697 1 000000006e827cbb 100 0 0 10 0"
	capturedMapped6   = "   2: 0000000000000000FFFF00000100007F:C551 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 40270698 1 0000000052d45375 100 0 0 10 0"
	capturedMappedEs6 = "   4: 0000000000000000FFFF00000100007F:A033 0000000000000000FFFF00000100007F:AC68 01 00000000:00000000 00:00000000 00000000     0        0 40270700 1 00000000ab8d2121 20 0 0 10 -1"
	capturedClient6   = "   5: 00000000000000000000000001000000:A54C 00000000000000000000000001000000:8E2B 01 00000000:00000000 00:00000000 00000000  1000        0 40270701 2 00000000246f3c7a 20 0 0 10 -1"
	capturedHeader4   = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode                                                     "
	capturedHeader6   = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"
)

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func TestParseLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want socket
	}{
		{"IPv4 listener", capturedListen4, socket{local: ap("127.0.0.1:35723"), remote: ap("0.0.0.0:0"), state: stateListen, uid: 65534, inode: 40271939}},
		{"IPv4 wildcard listener, trailing blanks", capturedWildcard4, socket{local: ap("0.0.0.0:2024"), remote: ap("0.0.0.0:0"), state: stateListen, uid: 0, inode: 1060}},
		{"IPv4 client end", capturedClient4, socket{local: ap("127.0.0.1:59606"), remote: ap("127.0.0.1:35723"), state: 1, uid: 65534, inode: 40271940}},
		{"IPv4 server end, queued", capturedQueued4, socket{local: ap("127.0.0.1:35723"), remote: ap("127.0.0.1:59606"), state: 1, uid: 65534, inode: 0}},
		{"IPv4 server end, accepted", capturedAccepted4, socket{local: ap("127.0.0.1:35723"), remote: ap("127.0.0.1:59606"), state: 1, uid: 65534, inode: 40271942}},
		{"IPv4 TIME_WAIT", capturedTimeWait4, socket{local: ap("127.0.0.1:36449"), remote: ap("127.0.0.1:60690"), state: 6, uid: 0, inode: 0}},
		{"IPv6 [::1] listener", capturedLoopback6, socket{local: ap("[::1]:36395"), remote: ap("[::]:0"), state: stateListen, uid: 0, inode: 40270696}},
		{"IPv6 [::] listener", capturedWildcard6, socket{local: ap("[::]:41011"), remote: ap("[::]:0"), state: stateListen, uid: 0, inode: 40270697}},
		{"IPv6 v4-mapped listener", capturedMapped6, socket{local: ap("[::ffff:127.0.0.1]:50513"), remote: ap("[::]:0"), state: stateListen, uid: 0, inode: 40270698}},
		{"IPv6 v4-mapped server end", capturedMappedEs6, socket{local: ap("[::ffff:127.0.0.1]:41011"), remote: ap("[::ffff:127.0.0.1]:44136"), state: 1, uid: 0, inode: 40270700}},
		{"IPv6 client end", capturedClient6, socket{local: ap("[::1]:42316"), remote: ap("[::1]:36395"), state: 1, uid: 1000, inode: 40270701}},
		{"the largest uid", "0: 0100007F:0001 00000000:0000 0A 0:0 0:0 0 4294967295 0 1", socket{local: ap("127.0.0.1:1"), remote: ap("0.0.0.0:0"), state: stateListen, uid: 4294967295, inode: 1}},
		{"lower-case hex", "0: 0100007f:ffff 00000000:0000 0a 0:0 0:0 0 7 0 1", socket{local: ap("127.0.0.1:65535"), remote: ap("0.0.0.0:0"), state: stateListen, uid: 7, inode: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLine(tt.line, binary.LittleEndian)
			if err != nil {
				t.Fatalf("got error %v, want %+v", err, tt.want)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestParseLineBigEndian reads an address as a big-endian kernel (s390x) prints it.
func TestParseLineBigEndian(t *testing.T) {
	got, err := parseLine("0: 7F000001:8B8B 00000000:0000 0A 0:0 0:0 0 1000 0 9", binary.BigEndian)
	if err != nil {
		t.Fatal(err)
	}
	if want := ap("127.0.0.1:35723"); got.local != want {
		t.Errorf("got %s, want %s", got.local, want)
	}
	got, err = parseLine("0: 00000000000000000000000000000001:8B8B 00000000000000000000000000000000:0000 0A 0:0 0:0 0 1000 0 9", binary.BigEndian)
	if err != nil {
		t.Fatal(err)
	}
	if want := ap("[::1]:35723"); got.local != want {
		t.Errorf("got %s, want %s", got.local, want)
	}
}

func TestParseLineRefuses(t *testing.T) {
	tests := []struct{ name, line string }{
		{"empty", ""},
		{"the header", capturedHeader4},
		{"too few fields", "0: 0100007F:8B8B 00000000:0000 0A 0:0 0:0 0 1000 0"},
		{"no slot colon", "0 0100007F:8B8B 00000000:0000 0A 0:0 0:0 0 1000 0 9"},
		{"a slot not a number", "x: 0100007F:8B8B 00000000:0000 0A 0:0 0:0 0 1000 0 9"},
		{"short address", "0: 100007F:8B8B 00000000:0000 0A 0:0 0:0 0 1000 0 9"},
		{"no port", "0: 0100007F 00000000:0000 0A 0:0 0:0 0 1000 0 9"},
		{"short port", "0: 0100007F:8B8 00000000:0000 0A 0:0 0:0 0 1000 0 9"},
		{"a sign in the address", "0: +100007F:8B8B 00000000:0000 0A 0:0 0:0 0 1000 0 9"},
		{"not hex", "0: 0100007G:8B8B 00000000:0000 0A 0:0 0:0 0 1000 0 9"},
		{"IPv6 with a short word", "0: 0000000000000000000000000100000:8B8B 00000000000000000000000000000000:0000 0A 0:0 0:0 0 1000 0 9"},
		{"mixed families", "0: 0100007F:8B8B 00000000000000000000000000000000:0000 0A 0:0 0:0 0 1000 0 9"},
		{"one-digit state", "0: 0100007F:8B8B 00000000:0000 A 0:0 0:0 0 1000 0 9"},
		{"state not hex", "0: 0100007F:8B8B 00000000:0000 0Z 0:0 0:0 0 1000 0 9"},
		{"negative uid", "0: 0100007F:8B8B 00000000:0000 0A 0:0 0:0 0 -1 0 9"},
		{"uid past 32 bits", "0: 0100007F:8B8B 00000000:0000 0A 0:0 0:0 0 4294967296 0 9"},
		{"uid not a number", "0: 0100007F:8B8B 00000000:0000 0A 0:0 0:0 0 root 0 9"},
		{"inode not a number", "0: 0100007F:8B8B 00000000:0000 0A 0:0 0:0 0 1000 0 x"},
		{"inode past 64 bits", "0: 0100007F:8B8B 00000000:0000 0A 0:0 0:0 0 1000 0 18446744073709551616"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLine(tt.line, binary.LittleEndian)
			if err == nil {
				t.Fatalf("got %+v, want an error", got)
			}
			if !errors.Is(err, errFormat) {
				t.Errorf("got error %v, want one that wraps errFormat", err)
			}
			if strings.Contains(err.Error(), tt.line) && tt.line != "" {
				t.Errorf("the error %q echoes the line", err)
			}
		})
	}
}

func TestReadTable(t *testing.T) {
	table := capturedHeader4 + "\n" + capturedListen4 + "\n" + capturedClient4 + "\n" + capturedQueued4 + "\n"
	got, err := readTable(strings.NewReader(table), binary.LittleEndian, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].local != ap("127.0.0.1:35723") || got[2].remote != ap("127.0.0.1:59606") {
		t.Errorf("got %+v, want the three sockets of the table", got)
	}

	got, err = readTable(strings.NewReader(capturedHeader6+"\n"), binary.LittleEndian, 0)
	if err != nil || len(got) != 0 {
		t.Errorf("a header alone: got %+v, %v, want no sockets and no error", got, err)
	}

	for name, table := range map[string]string{
		"empty":             "",
		"no header":         capturedListen4 + "\n",
		"a bad line":        capturedHeader4 + "\n" + capturedListen4 + "\n" + "garbage\n",
		"a header twice":    capturedHeader4 + "\n" + capturedHeader4 + "\n",
		"a truncated line":  capturedHeader4 + "\n" + capturedListen4[:40] + "\n",
		"an IPv6 bad field": capturedHeader6 + "\n" + strings.Replace(capturedLoopback6, ":8E2B", ":8E2", 1) + "\n",
	} {
		if got, err := readTable(strings.NewReader(table), binary.LittleEndian, 0); !errors.Is(err, errFormat) {
			t.Errorf("%s: got %+v, %v, want an error that wraps errFormat", name, got, err)
		}
	}
	_, err = readTable(strings.NewReader(capturedHeader4+"\n"+capturedListen4+"\n"+"garbage\n"), binary.LittleEndian, 0)
	if want := "line 3: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want an error that starts with %q", err, want)
	}
}

// TestReadTablePort: with a port, readTable keeps the lines of that local port, skips the others
// unparsed, and still refuses a line it cannot tell the port of.
func TestReadTablePort(t *testing.T) {
	table := capturedHeader4 + "\n" + capturedListen4 + "\n" + capturedClient4 + "\n" + capturedQueued4 + "\n" +
		"9: 0100007F:0016 garbage\n" + capturedTimeWait4 + "\n"
	got, err := readTable(strings.NewReader(table), binary.LittleEndian, 35723)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].state != stateListen || got[1].remote != ap("127.0.0.1:59606") {
		t.Errorf("got %+v, want the listener and the queued connection of port 35723", got)
	}
	// A line the filter cannot read is parsed, and kept when it is of the port.
	tabs := "9:\t0100007F:8B8B\t00000000:0000 0A 0:0 0:0 0 1000 0 9"
	if got, err := readTable(strings.NewReader(capturedHeader4+"\n"+tabs+"\n"), binary.LittleEndian, 35723); err != nil || len(got) != 1 {
		t.Errorf("%q: got %+v, %v, want the socket", tabs, got, err)
	}
	for _, bad := range []string{"garbage", "9:\t0100007F:8B8B garbage", "9: 0100007F:8B8B garbage"} {
		if got, err := readTable(strings.NewReader(capturedHeader4+"\n"+bad+"\n"), binary.LittleEndian, 35723); !errors.Is(err, errFormat) {
			t.Errorf("%q: got %+v, %v, want an error that wraps errFormat", bad, got, err)
		}
	}
}

func TestLocalPort(t *testing.T) {
	tests := []struct {
		line string
		port uint16
		ok   bool
	}{
		{capturedListen4, 35723, true},
		{capturedQueued4, 35723, true},
		{capturedMapped6, 50513, true},
		{"0: 0100007f:ffff", 65535, true},
		{"", 0, false},
		{"   1:", 0, false},
		{"1: 0100007F", 0, false},
		{"1: 0100007F:8B8", 0, false},
		{"1: 0100007F:8B8G x", 0, false},
		{"1:\t0100007F:8B8B 00000000:0000", 0, false},
		{"1: 0100007F:8B8B\u00a000000000:0000", 0, false},
	}
	for _, tt := range tests {
		if p, ok := localPort([]byte(tt.line)); p != tt.port || ok != tt.ok {
			t.Errorf("%q: got %d, %t, want %d, %t", tt.line, p, ok, tt.port, tt.ok)
		}
	}
}

// format prints s as the kernel does, in order.
func format(s socket, order binary.ByteOrder) string {
	addr := func(a netip.AddrPort) string {
		b := a.Addr().AsSlice()
		var out strings.Builder
		for i := 0; i < len(b); i += 4 {
			fmt.Fprintf(&out, "%08X", order.Uint32(b[i:]))
		}
		fmt.Fprintf(&out, ":%04X", a.Port())
		return out.String()
	}
	return fmt.Sprintf("%4d: %s %s %02X 00000000:00000000 00:00000000 00000000 %5d        0 %d 1 0000000000000000 20 0 0 10 -1",
		0, addr(s.local), addr(s.remote), s.state, s.uid, s.inode)
}

func FuzzParseLine(f *testing.F) {
	for _, line := range []string{
		capturedListen4, capturedWildcard4, capturedClient4, capturedQueued4, capturedAccepted4, capturedTimeWait4,
		capturedLoopback6, capturedWildcard6, capturedMapped6, capturedMappedEs6, capturedClient6, capturedHeader4,
		"0: 0100007F:0001 00000000:0000 0A 0:0 0:0 0 4294967295 0 1", "",
	} {
		f.Add(line, false)
		f.Add(line, true)
	}
	f.Fuzz(func(t *testing.T, line string, bigEndian bool) {
		var order binary.ByteOrder = binary.LittleEndian
		if bigEndian {
			order = binary.BigEndian
		}
		s, err := parseLine(line, order)
		if err != nil {
			if !errors.Is(err, errFormat) {
				t.Fatalf("got error %v, want one that wraps errFormat", err)
			}
			return
		}
		if s.local.Addr().BitLen() != s.remote.Addr().BitLen() {
			t.Fatalf("got %+v: the two addresses are of different families", s)
		}
		// What was read prints back as the kernel would print it, and reads the same again.
		again, err := parseLine(format(s, order), order)
		if err != nil {
			t.Fatalf("%+v printed back does not parse: %v", s, err)
		}
		if again != s {
			t.Fatalf("%+v printed back reads %+v", s, again)
		}
		// And the table reader takes it under a header.
		if _, err := readTable(strings.NewReader(capturedHeader4+"\n"+line+"\n"), order, 0); err != nil && !strings.ContainsAny(line, "\n\r") && len(line) < 60000 {
			t.Fatalf("readTable refused a line parseLine took: %v", err)
		}
		// The filter by port never skips a line of the port it filters for.
		if p, ok := localPort([]byte(line)); ok && p != s.local.Port() {
			t.Fatalf("localPort says %d, parseLine %d", p, s.local.Port())
		}
	})
}
