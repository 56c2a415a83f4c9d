package sshconfig

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/krad-ade/krad/internal/termsafe"
)

// expandTokens replaces ssh_config's %-tokens in s with their values in vals, keyed by the letter
// after the '%' ('h' for %h); "%%" is a literal '%'. A token vals does not hold and a '%' at the
// end are errors, as they are for ssh: a path built from a guess is worse than no path.
func expandTokens(s string, vals map[byte]string) (string, error) {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s, nil
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return "", errors.New("'%' at the end")
		}
		i++
		if s[i] == '%' {
			b.WriteByte('%')
			continue
		}
		v, ok := vals[s[i]]
		if !ok {
			return "", fmt.Errorf("unknown token %q", s[i-1:i+1])
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// expandTilde replaces a leading "~" or "~/" with home. "~user/…" is left as it is: looking up
// other users' homes is not something a forward needs.
func expandTilde(s, home string) string {
	if s == "~" {
		return home
	}
	if strings.HasPrefix(s, "~/") {
		return strings.TrimSuffix(home, "/") + s[1:]
	}
	return s
}

// hostSpec is a host as written on ssh's command line or in ProxyJump: [user@]host[:port], or
// ssh://[user@]host[:port]. Port is 0 when not given.
type hostSpec struct {
	User string
	Host string
	Port int
}

// parseHostSpec parses s as a hostSpec. An IPv6 address with a port is written in brackets:
// [::1]:2222; without one the brackets may be left out.
func parseHostSpec(s string) (hostSpec, error) {
	var h hostSpec
	rest := strings.TrimSpace(s)
	rest = strings.TrimPrefix(rest, "ssh://")
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		h.User, rest = rest[:i], rest[i+1:]
		if h.User == "" {
			return hostSpec{}, fmt.Errorf("host %s: empty user before '@'", termsafe.Quote(s))
		}
	}
	switch {
	case strings.HasPrefix(rest, "["):
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return hostSpec{}, fmt.Errorf("host %s: '[' without ']'", termsafe.Quote(s))
		}
		host, after := rest[1:end], rest[end+1:]
		h.Host = host
		if after != "" {
			if after[0] != ':' {
				return hostSpec{}, fmt.Errorf("host %s: unexpected text after ']'", termsafe.Quote(s))
			}
			p, err := parsePort(after[1:])
			if err != nil {
				return hostSpec{}, fmt.Errorf("host %s: %w", termsafe.Quote(s), err)
			}
			h.Port = p
		}
	case strings.Count(rest, ":") == 1:
		host, port, _ := strings.Cut(rest, ":")
		p, err := parsePort(port)
		if err != nil {
			return hostSpec{}, fmt.Errorf("host %s: %w", termsafe.Quote(s), err)
		}
		h.Host, h.Port = host, p
	default:
		// No colon, or several: a bare IPv6 address.
		h.Host = rest
	}
	if h.Host == "" {
		return hostSpec{}, fmt.Errorf("host %s: no host name", termsafe.Quote(s))
	}
	if !validHostName(h.Host) {
		return hostSpec{}, fmt.Errorf("host %s: not a host name", termsafe.Quote(s))
	}
	if strings.ContainsFunc(h.User, isControl) || strings.ContainsAny(h.User, " \t/") {
		return hostSpec{}, fmt.Errorf("host %s: not a user name", termsafe.Quote(s))
	}
	return h, nil
}

// String writes h back as [user@]host[:port], the host in brackets when it needs them.
func (h hostSpec) String() string {
	s := h.Host
	if h.Port != 0 {
		s = net.JoinHostPort(h.Host, strconv.Itoa(h.Port))
	}
	if h.User != "" {
		s = h.User + "@" + s
	}
	return s
}

// validHostName says whether s can be a host name, an IP address or an ssh_config alias: letters,
// digits, '.', '-' and '_', or an IPv6 address. A leading '-' is refused, as ssh refuses it: such
// a name is an option to every command it may be passed to (ssh-keyscan in a hint).
func validHostName(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	if strings.Contains(s, ":") {
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is6()
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_'
		if !ok {
			return false
		}
	}
	return true
}

// parsePort parses a TCP port, 1 to 65535.
func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 || s[0] == '+' {
		return 0, fmt.Errorf("bad port %s", termsafe.Quote(s))
	}
	return p, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
