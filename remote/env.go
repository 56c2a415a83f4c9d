package remote

import (
	"errors"
	"fmt"
	"net/netip"
	"path"
	"strings"
)

// DefaultPath is the PATH a host's terminal gets after the installed folder when [Vars.Path] is
// empty.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// Vars are the variables of one terminal on an SSH host: where the bus is, where the token is,
// which terminal this is, and the installed krad first in PATH. There is deliberately no field
// for the token itself: on a host it lives in the file, never in an environment.
type Vars struct {
	Endpoint  string // the forwarded address on the host, a loopback one: 127.0.0.1:41877
	TokenFile string // the absolute path of the token file, from tokenfile.Write
	Terminal  string // the terminal, environment:number, like build:3
	BinDir    string // the folder Install returned
	Path      string // the PATH the terminal would have otherwise; "" is DefaultPath
}

// Env returns the variables as NAME=value: KRAD_ADE_ENDPOINT, KRAD_ADE_TOKEN_FILE,
// KRAD_ADE_TERMINAL and PATH, with BinDir first in PATH (and nowhere else in it).
func (v Vars) Env() ([]string, error) {
	ap, err := netip.ParseAddrPort(v.Endpoint)
	if err != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
		return nil, fmt.Errorf("terminal variables: the endpoint %q is not a loopback address and port", shorten(v.Endpoint, 100))
	}
	if err := checkPath("token file", v.TokenFile); err != nil {
		return nil, err
	}
	if err := checkPath("installed folder", v.BinDir); err != nil {
		return nil, err
	}
	if strings.Contains(v.BinDir, ":") {
		return nil, fmt.Errorf("terminal variables: the installed folder %q has a colon, which PATH cannot hold", shorten(v.BinDir, 200))
	}
	if v.Terminal == "" || hasControl(v.Terminal) {
		return nil, fmt.Errorf("terminal variables: the terminal %q is empty or has control characters", shorten(v.Terminal, 100))
	}
	if hasControl(v.Path) {
		return nil, errors.New("terminal variables: PATH has control characters")
	}
	rest := v.Path
	if rest == "" {
		rest = DefaultPath
	}
	dirs := []string{v.BinDir}
	for d := range strings.SplitSeq(rest, ":") {
		if path.Clean(d) != path.Clean(v.BinDir) {
			dirs = append(dirs, d)
		}
	}
	return []string{
		"KRAD_ADE_ENDPOINT=" + ap.String(),
		"KRAD_ADE_TOKEN_FILE=" + v.TokenFile,
		"KRAD_ADE_TERMINAL=" + v.Terminal,
		"PATH=" + strings.Join(dirs, ":"),
	}, nil
}

func checkPath(what, p string) error {
	if !path.IsAbs(p) || hasControl(p) {
		return fmt.Errorf("terminal variables: the %s %q is not an absolute path", what, shorten(p, 200))
	}
	return nil
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f })
}
