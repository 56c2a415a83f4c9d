package forward

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// The parsers of outside input: what a host prints (/proc/net/tcp, /proc/PID/stat, the sections
// of our commands' output).

func FuzzParseProcNetTCP(f *testing.F) {
	f.Add([]byte(procNetTCP))
	f.Add([]byte("   0: 0100007F:B355 00000000:0000 0A 0:0 0:0 0 1000 0 1 1\n"))
	f.Add([]byte("0: :\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		socks := parseProcNetTCP(data)
		for _, s := range socks {
			if !s.Local.IsValid() {
				t.Errorf("socket with an invalid address: %+v", s)
			}
		}
		// Checking never panics, and says something definite.
		err := checkLoopback(socks, 45909, 1000, nil)
		if err != nil && !errors.Is(err, ErrNotLoopback) && !errors.Is(err, ErrUncheckable) {
			t.Errorf("checkLoopback = %v", err)
		}
	})
}

func FuzzParseFDs(f *testing.F) {
	f.Add([]byte("total 0\nlrwx------ 1 u u 64 Dec  1 13:09 3 -> socket:[40238856]\n"))
	f.Add([]byte("l 1 -> socket:[]\nl 2 -> socket:[18446744073709551616]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fds := parseFDs(data)
		if fds != nil && len(fds) == 0 {
			t.Error("parseFDs returned an empty set; want nil for none")
		}
		if len(fds) > bytes.Count(data, []byte("socket:[")) {
			t.Errorf("parseFDs found %d sockets in %q", len(fds), data)
		}
	})
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("18610 (sshd) S 18551 18610 18610 0 -1 4194560 1043 0 0 0 2 1 0 0 20 0 1 0 40123456 16003072\n"))
	f.Add([]byte("1 ((x)) R"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseProcStat(data)
		if err == nil && strings.Contains(st.Comm, "\n") && !bytes.Contains(data, []byte("\n")) {
			t.Errorf("parseProcStat(%q) = %+v", data, st)
		}
	})
}

func FuzzSections(f *testing.F) {
	f.Add([]byte("noise\nkrad-forward:pid\n1\nkrad-forward:end\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		total := 0
		for _, v := range sections(data) {
			total += len(v)
		}
		if total > len(data) {
			t.Errorf("sections hold %d bytes of %d", total, len(data))
		}
	})
}
