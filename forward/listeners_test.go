package forward

import (
	"bytes"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
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
	// The sockets of a process (this one), as krad prints them with --of, read as ls -l's:
	// the listener is among them.
	var fds bytes.Buffer
	if _, err := listenowner.WriteSocketsOf(&fds, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if held := parseFDs(fds.Bytes()); !held[socks[0].Inode] {
		t.Errorf("krad's list of this process's sockets reads as %v, without the listener's inode %d:\n%s", held, socks[0].Inode, fds.Bytes())
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

// TestSessionScriptFallsBack: what the command prints (our uid, the sockets of the sshd
// session, the listeners) is what the check reads when it prints a table; when it fails, or
// prints no table (no header), id, ls and the host's files are read instead; an empty command,
// or one of two lines, is never run. The command gets the session's pid (--of) and the markers
// (--sections) as krad-ade-agents listeners takes them.
func TestSessionScriptFallsBack(t *testing.T) {
	_, port := listenLoopback(t)
	table := `  sl  local_address rem_address   st\n   0: 0100007F:0001 00000000:0000 0A 00000000:00000000 00:00000000 00000000  4242        0 7\n`
	krad := `case "$*" in *"--of $PPID --sections ` + marker + `"*) ;; *) exit 5;; esac; printf '%suid\n4242\n%sfd\n3 -> socket:[7]\n%stcp\n` + table + `' "$6" "$6" "$6"`
	for _, tc := range []struct {
		name, cmd string
		fromKrad  bool
	}{
		{"a table", krad, true},
		{"a failure", krad + "; exit 1", false},
		{"no header", "echo 'command not found'", false},
		{"nothing", "", false},
		{"two lines", "echo a\necho b", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := infoScript(port, func(int) string {
				if tc.cmd == "" {
					return ""
				}
				return "krad_cmd() { " + tc.cmd + "; }; krad_cmd listeners " + strconv.Itoa(port)
			})
			out, err := exec.Command("sh", "-c", script).Output()
			if err != nil {
				t.Fatal(err)
			}
			info, err := parseHostInfo(out)
			if err != nil {
				t.Fatalf("%v; the script printed %q", err, out)
			}
			fromKrad := info.session.UID == 4242 && len(info.sockets) == 1 && info.sockets[0].UID == 4242 && info.fds[7] && len(info.fds) == 1
			fromFiles := info.session.UID == uint32(os.Getuid()) && len(listeners(info.sockets, port)) == 1 && info.tcpRead
			if fromKrad != tc.fromKrad || fromFiles == tc.fromKrad {
				t.Errorf("printed %q, read as %+v: want the command's %v, the files' %v", out, info, tc.fromKrad, !tc.fromKrad)
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
