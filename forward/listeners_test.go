package forward

import (
	"bytes"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/krad-ade/krad/listenowner"
)

// TestListenersAgree: the table the static krad prints on a host (listenowner.WriteListeners) is
// read by this package's parser as the kernel's own: the listener, its address, its uid and
// its inode.
func TestListenersAgree(t *testing.T) {
	ln, port := listenLoopback(t)
	var out bytes.Buffer
	if _, err := listenowner.WriteListeners(&out, uint16(port)); err != nil {
		t.Fatal(err)
	}
	socks := parseProcNetTCP(out.Bytes())
	kernel := listeners(parseProcNetTCP(procTCP(t)), port)
	if len(socks) != 1 || len(kernel) != 1 || socks[0] != kernel[0] {
		t.Fatalf("krad's table reads as %+v, the kernel's as %+v; want the one listener, alike", socks, kernel)
	}
	if s := socks[0]; s.Local != netip.MustParseAddrPort(ln.Addr().String()) || s.State != tcpListen || s.UID != uint32(os.Getuid()) || s.Inode == 0 {
		t.Errorf("the listener reads as %+v", s)
	}
	if !bytes.Contains(out.Bytes(), []byte("local_address")) {
		t.Error("krad's table has no header: the check would take it for no table")
	}
}

// listenLoopback listens on 127.0.0.1, on a port the system picks, until t ends.
func listenLoopback(t *testing.T) (net.Listener, int) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, ln.Addr().(*net.TCPAddr).Port
}

func procTCP(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skip(err)
	}
	return b
}

// TestListenersScriptFallsBack: the command's table is what the check reads when it prints one;
// when it fails, or prints no table (no header), the host's files are read instead; an empty
// command, or one of two lines, is never run.
func TestListenersScriptFallsBack(t *testing.T) {
	_, port := listenLoopback(t)
	table := `  sl  local_address rem_address   st\n   0: 0100007F:0001 00000000:0000 0A 00000000:00000000 00:00000000 00000000  4242        0 7\n`
	for _, tc := range []struct {
		name, cmd string
		fromKrad  bool
	}{
		{"a table", "printf '" + table + "'", true},
		{"a failure", "printf '" + table + "'; exit 1", false},
		{"no header", "echo 'command not found'", false},
		{"nothing", "", false},
		{"two lines", "echo a\necho b", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := listenersScript(func(int) string { return tc.cmd }, port)
			out, _ := exec.Command("sh", "-c", script).Output()
			socks := parseProcNetTCP(out)
			fromKrad := len(socks) == 1 && socks[0].UID == 4242
			fromFiles := len(listeners(socks, port)) == 1
			if fromKrad != tc.fromKrad || fromFiles == tc.fromKrad || !strings.Contains(string(out), "local_address") {
				t.Errorf("printed %q: want the command's table %v, the files' %v", out, tc.fromKrad, !tc.fromKrad)
			}
		})
	}
}

// FuzzStderrAfterMarker: whatever the shell printed on stderr before the marker, and however
// the stream is cut into writes, the exec'd command's stderr is exactly what came after the
// marker line.
func FuzzStderrAfterMarker(f *testing.F) {
	f.Add([]byte("noise\n"), []byte("tmux: no server\n"), uint8(3))
	f.Add([]byte(""), []byte(""), uint8(1))
	f.Add([]byte("__KRAD_FWD_exec-\n"), []byte("x"), uint8(7))
	f.Fuzz(func(t *testing.T, before, after []byte, cut uint8) {
		const m = marker + "exec-1"
		if bytes.Contains(before, []byte(m+"\n")) {
			t.Skip() // the marker inside what came before: not a stream the shell prints
		}
		w := &stderrTo{}
		b := w.fresh(1<<20, m)
		stream := append(append(append([]byte{}, before...), m+"\n"...), after...)
		n := int(cut)%7 + 1
		for len(stream) > 0 {
			k := min(n, len(stream))
			if got, err := w.Write(stream[:k]); got != k || err != nil {
				t.Fatalf("Write: %d, %v", got, err)
			}
			stream = stream[k:]
		}
		if got := b.String(); got != string(after) {
			t.Errorf("the command's stderr is %q, want %q", got, after)
		}
	})
}
