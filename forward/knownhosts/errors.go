package knownhosts

import (
	"fmt"
	"strings"
)

// HostKeyError is a host key that known_hosts does not vouch for. Known empty means the host is
// unknown (under StrictHostKeyChecking ask or yes, the default); Known non-empty means the host
// offered a key other than the ones known for it: either it was reinstalled or someone is in the
// middle. Both are refused, and retrying cannot fix either: a person must decide.
//
// When the host offered a certificate that known_hosts' @cert-authority lines do not vouch for,
// Cert says why, and the rest is about its key checked as a plain key, as ssh checks it.
type HostKeyError struct {
	// Host is the name looked up in known_hosts: "buildbox.example.com", "[10.0.0.7]:2222", or
	// the HostKeyAlias.
	Host string
	// Got is the fingerprint of the key the host offered, "SHA256:…", and GotType its type.
	Got, GotType string
	// Known are the fingerprints known_hosts holds for Host, and Lines their places there
	// ("/home/me/.ssh/known_hosts:12"), in the same order. Line is the first of Lines.
	Known, Lines []string
	Line         string
	// Revoked: the key offered is marked @revoked (at Line), or, with Cert saying so, the CA
	// of its certificate.
	Revoked bool
	// Cert is why the host's certificate was refused ("it expired at …"), when it offered one.
	Cert string
	// Hint is the next step for a person: a command to run.
	Hint string
}

// Unknown says whether known_hosts holds no key at all for the host.
func (e *HostKeyError) Unknown() bool { return len(e.Known) == 0 && !e.Revoked }

func (e *HostKeyError) Error() string {
	var b strings.Builder
	subject, none := "host key of "+e.Host, "known_hosts holds no key for it"
	if e.Cert != "" {
		fmt.Fprintf(&b, "host certificate of %s is refused: %s", e.Host, e.Cert)
		if e.Revoked {
			fmt.Fprintf(&b, " (%s)", e.Line)
			return b.String()
		}
		b.WriteString("; ")
		subject, none = "its key, checked as a plain key,", "known_hosts holds no plain key for it"
	}
	switch {
	case e.Revoked:
		fmt.Fprintf(&b, "%s is revoked (%s, %s at %s)", subject, e.GotType, e.Got, e.Line)
	case len(e.Known) == 0:
		fmt.Fprintf(&b, "%s is unknown: it offers %s key %s, and %s", subject, e.GotType, e.Got, none)
	default:
		fmt.Fprintf(&b, "%s has changed: it offers %s key %s, but known_hosts holds ", subject, e.GotType, e.Got)
		for i, k := range e.Known {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s (%s)", k, e.Lines[i])
		}
		b.WriteString("; the host was reinstalled, or someone is in the middle")
	}
	if e.Hint != "" {
		b.WriteString(": ")
		b.WriteString(e.Hint)
	}
	return b.String()
}
