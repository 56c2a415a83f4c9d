//go:build linux

package listenowner_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/krad-ade/krad/listenowner"
)

// TestWriteListeners: the table WriteListeners writes for a port holds, in the kernel's own
// format, exactly the listening lines that /proc/net/tcp and tcp6 have for it, field for field
// where the check of a forward reads them (local and remote address, state, uid, inode), under
// the kernel's header: not the connections on that port, and not the listeners on others.
func TestWriteListeners(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if hasIPv6() {
		ln6, err := net.Listen("tcp6", fmt.Sprintf("[::1]:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		defer ln6.Close()
	}
	other, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn := dial(t, "127.0.0.1", port) // an established socket on the port: not listed
	_ = conn

	var out bytes.Buffer
	n, err := listenowner.WriteListeners(&out, uint16(port))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	header, err := firstLine("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimRight(lines[0], " ") != strings.TrimRight(header, " ") {
		t.Errorf("the header is %q, want the kernel's %q", lines[0], header)
	}
	var want []string
	for _, path := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		want = append(want, kernelListeners(t, path, port)...)
	}
	var got []string
	for _, l := range lines[1:] {
		got = append(got, readFields(l))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || n != len(want) {
		t.Errorf("WriteListeners wrote %d:\n%s\nwant the kernel's listeners on port %d:\n%s", n, strings.Join(got, "\n"), port, strings.Join(want, "\n"))
	}
}

// readFields is the fields of a /proc/net/tcp line that the forward's check reads.
func readFields(line string) string {
	f := strings.Fields(line)
	if len(f) < 10 {
		return "short: " + line
	}
	return strings.Join([]string{f[1], f[2], f[3], f[7], f[9]}, " ")
}

func firstLine(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	return sc.Text(), sc.Err()
}

// kernelListeners is the listening lines of the table at path whose local port is port.
func kernelListeners(t *testing.T, path string, port int) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) >= 10 && strings.HasSuffix(f[1], fmt.Sprintf(":%04X", port)) && f[3] == "0A" {
			out = append(out, readFields(l))
		}
	}
	return out
}

// TestWriteSocketsOf: the sockets WriteSocketsOf lists for a process are those its descriptors
// hold, in ls -l's "FD -> socket:[INODE]": this process's listener is there, under its own
// descriptor and the kernel's inode for it; a process that does not exist has none, and no error.
func TestWriteSocketsOf(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File() // a second descriptor of the same socket
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inode, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	n, err := listenowner.WriteSocketsOf(&out, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d -> %s\n", f.Fd(), inode)
	if !strings.HasPrefix(inode, "socket:[") || !strings.Contains(out.String(), want) || n != strings.Count(out.String(), "\n") {
		t.Errorf("WriteSocketsOf wrote %d:\n%s\nwant a line %q among them", n, out.String(), want)
	}
	out.Reset()
	if n, err := listenowner.WriteSocketsOf(&out, 1<<30); err != nil || n != 0 || out.Len() != 0 {
		t.Errorf("for no such process: %d, %v, %q; want nothing and no error", n, err, out.String())
	}
}
