package sshconfig

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

// The parsers of outside input: ssh_config files and values (the user's), and host specs.

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
