package forward

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The parsers of outside input: ssh_config values and files (the user's), what a host prints
// (/proc/net/tcp, /proc/PID/stat, the sections of our commands' output), and host specs.

func FuzzExpandTokens(f *testing.F) {
	for _, s := range []string{"", "plain", "%h:%p", "%%", "a%", "%z", "~/.ssh/id_%r@%h", "%%%%h%"} {
		f.Add(s)
	}
	vals := map[byte]string{'h': "H", 'p': "22", 'r': "R", 'u': "U", 'd': "/D", '%': "never used"}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := expandTokens(s, vals)
		if err != nil {
			if got != "" {
				t.Errorf("expandTokens(%q) = %q with error %v", s, got, err)
			}
			return
		}
		if !strings.Contains(s, "%") && got != s {
			t.Errorf("expandTokens(%q) = %q, want it unchanged", s, got)
		}
		// Every '%' of the input went into a token: none is left unless a value holds one.
		if strings.Count(got, "%") > strings.Count(s, "%%") {
			t.Errorf("expandTokens(%q) = %q: more '%%' than the input's %%%%", s, got)
		}
	})
}

func FuzzParseHostSpec(f *testing.F) {
	for _, s := range []string{"host", "u@h:22", "ssh://u@[::1]:2222", "[::1", "h:", "@", "a@b@c:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseHostSpec(s)
		if err != nil {
			if utf8.ValidString(s) && !strings.ContainsFunc(s, isControl) {
				return
			}
			if strings.ContainsFunc(err.Error(), isControl) {
				t.Errorf("parseHostSpec(%q): error %q carries control characters", s, err)
			}
			return
		}
		if h.Host == "" || h.Port < 0 || h.Port > 65535 {
			t.Errorf("parseHostSpec(%q) = %+v", s, h)
		}
		// What String writes parses back to the same.
		again, err := parseHostSpec(h.String())
		if err != nil || again != h {
			t.Errorf("parseHostSpec(%q) = %+v; its String %q parses to %+v, %v", s, h, h.String(), again, err)
		}
	})
}

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

func FuzzParseSSHConfig(f *testing.F) {
	f.Add([]byte("Host a\n  Port 22\nMatch exec foo\n  User x\n"))
	f.Add([]byte("Host *\n\tIdentityFile ~/.ssh/id_%h\n"))
	f.Add([]byte("Match\n"))
	f.Add([]byte("Host host\n  ProxyCommand ssh -W %h:%p -l %r %n\nHost *\n  ProxyJump a,b\n"))
	f.Add([]byte("Host host\n  ProxyJump none\n  ProxyCommand nc %h %p %%\n"))
	f.Add([]byte("Host=\"host\" x\n  UserKnownHostsFile \"a b\" 'c\\'d' e\\ f # g\nMatch !host x,!y* user u final\n"))
	file := filepath.Join(f.TempDir(), "config")
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.Contains(bytes.ToLower(data), []byte("include")) {
			// Include reads other files (/dev/zero among them): not this target's business.
			t.Skip()
		}
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		// Match exec commands are not run: they are the fuzzer's, not a person's. They
		// exit with status 1.
		r := resolver{files: []string{file}, home: "/home/u", localUser: "u",
			runExec: func(string, time.Duration) (int, error) { return 1, nil }}
		h, err := r.resolve("host", 0, true)
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, w := range r.warnings {
			if w.Line < 0 || w.Line > lines {
				t.Errorf("warning on line %d of %d", w.Line, lines)
			}
			if strings.ContainsFunc(w.Reason, isControl) {
				t.Errorf("warning %q carries control characters", w.Reason)
			}
		}
		// Resolving through the file says something definite: a host, or a *ConfigError that
		// cannot act on a terminal.
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("resolve = %v, want a *ConfigError", err)
			}
			if strings.ContainsFunc(err.Error(), isControl) {
				t.Errorf("resolve: error %q carries control characters", err)
			}
			return
		}
		for _, hop := range append(h.Jump, h) {
			if hop.ProxyCommand != "" && hop != firstOf(h) {
				t.Errorf("%s has ProxyCommand %q, but only the first hop of a chain runs one", hop, hop.ProxyCommand)
			}
		}
	})
}

// firstOf returns the first host of h's chain: its first hop, else h.
func firstOf(h *Host) *Host {
	if len(h.Jump) > 0 {
		return h.Jump[0]
	}
	return h
}
