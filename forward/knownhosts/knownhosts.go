package knownhosts

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"

	"github.com/krad-ade/krad/forward/sshconfig"
	"github.com/krad-ade/krad/internal/termsafe"
)

// Checker checks one host's key against its known_hosts files: a plain key against the keys
// they hold for the host, a certificate against their @cert-authority lines.
type Checker struct {
	h      *sshconfig.Host
	name   string // the host's name in known_hosts: "host", "[host]:port", or the HostKeyAlias
	lookup string // the address knownhosts looks name up by: "host:port"
	db     ssh.HostKeyCallback
	known  []xknownhosts.KnownKey // the plain keys known for the host, in file order
	logger *slog.Logger

	// knownhosts can check certificates, but it has no call that lists a host's CAs, its
	// errors do not say why it refused a certificate, and it takes a CA's key for one of the
	// host's own keys. So the @cert-authority and @revoked lines are read here too, with
	// ssh.ParseKnownHosts, and certificates are checked here.
	cas     []xknownhosts.KnownKey // the CAs whose host patterns match the host
	caLines map[string]bool        // "file:line" of every @cert-authority line
	revoked []xknownhosts.KnownKey // the keys marked @revoked
}

// New reads h's known_hosts files, its own and those of the system, for the host's key. Files
// that do not exist count as empty. logger receives what was decided without an error: a key
// added, a certificate refused and its key checked as a plain key; nil discards it.
func New(h *sshconfig.Host, logger *slog.Logger) (*Checker, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	k := &Checker{h: h, logger: logger, caLines: map[string]bool{}}
	if h.HostKeyAlias != "" {
		k.lookup = net.JoinHostPort(h.HostKeyAlias, "22")
	} else {
		k.lookup = net.JoinHostPort(strings.ToLower(h.HostName), strconv.Itoa(h.Port))
	}
	k.name = xknownhosts.Normalize(k.lookup)

	var files []string
	for _, f := range slices.Concat(h.KnownHostsFiles, h.GlobalKnownHostsFiles) {
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("known_hosts: %w", err)
		}
	}
	db, err := xknownhosts.New(files...)
	if err != nil {
		return nil, &sshconfig.ConfigError{Host: h.Alias, Key: "UserKnownHostsFile", Reason: err.Error()}
	}
	k.db = db
	if err := k.readMarked(files); err != nil {
		return nil, err
	}

	// knownhosts has no call that lists a host's keys, but a mismatch lists them all: ask it
	// about a key no host has.
	probe, _ := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	var ke *xknownhosts.KeyError
	if errors.As(db(k.lookup, dummyAddr, probe), &ke) {
		k.known = k.plain(ke.Want)
	}
	return k, nil
}

var dummyAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 22}

// readMarked reads the @cert-authority and @revoked lines of files, and keeps the CAs whose
// host patterns match the host, matched as knownhosts matches them.
func (k *Checker) readMarked(files []string) error {
	host, port, _ := net.SplitHostPort(k.lookup)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("known_hosts: %w", err)
		}
		for i, line := range bytes.Split(data, []byte("\n")) {
			marker, patterns, key, _, _, err := ssh.ParseKnownHosts(line)
			if err != nil {
				continue // a comment, a blank line, or a line knownhosts leaves out too
			}
			at := xknownhosts.KnownKey{Key: key, Filename: f, Line: i + 1}
			switch marker {
			case "revoked":
				k.revoked = append(k.revoked, at)
			case "cert-authority":
				k.caLines[place(at)] = true
				if matchHostPatterns(patterns, host, port) {
					k.cas = append(k.cas, at)
				}
			}
		}
	}
	return nil
}

// plain returns the keys of want that are not @cert-authority lines: knownhosts counts a CA
// whose patterns match the host among the host's keys, which ssh does not.
func (k *Checker) plain(want []xknownhosts.KnownKey) []xknownhosts.KnownKey {
	var out []xknownhosts.KnownKey
	for _, w := range want {
		if !k.caLines[place(w)] {
			out = append(out, w)
		}
	}
	return out
}

func place(k xknownhosts.KnownKey) string { return fmt.Sprintf("%s:%d", k.Filename, k.Line) }

// Algorithms returns the host key algorithms to ask for (ssh.ClientConfig.HostKeyAlgorithms). When known_hosts holds a CA for the host
// its certificates come first, as ssh asks for them: a CA vouches for a key of any type. Then
// the types of the keys known for the host, so that a host with several keys shows one that
// known_hosts holds rather than one it does not, which would read as a changed key. Without a
// CA no certificate is asked for: none could be checked.
func (k *Checker) Algorithms() []string {
	var algos []string
	add := func(a ...string) {
		for _, x := range a {
			if !slices.Contains(algos, x) {
				algos = append(algos, x)
			}
		}
	}
	supported := ssh.SupportedAlgorithms().HostKeys
	isCert := func(a string) bool { return strings.Contains(a, "-cert-") }
	if len(k.cas) > 0 {
		for _, key := range k.known {
			if key.Key.Type() == ssh.KeyAlgoRSA {
				add(ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01)
			} else if c := key.Key.Type() + "-cert-v01@openssh.com"; slices.Contains(supported, c) {
				add(c)
			}
		}
		for _, a := range supported {
			if isCert(a) {
				add(a)
			}
		}
	}
	for _, key := range k.known {
		if key.Key.Type() == ssh.KeyAlgoRSA {
			add(ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256)
			continue
		}
		add(key.Key.Type())
	}
	for _, a := range supported {
		if !isCert(a) {
			add(a)
		}
	}
	return algos
}

// Check is the ssh.HostKeyCallback. A certificate must be signed by a CA that known_hosts holds
// for the host, be valid now and for the host's name; when it is not, its key is checked as a
// plain key, as ssh checks it. A plain key must be one known_hosts holds for the host. An
// unknown host is added under StrictHostKeyChecking accept-new or no, and refused with a
// [*HostKeyError] otherwise; a changed key is always refused, and so is a revoked one.
func (k *Checker) Check(_ string, remote net.Addr, key ssh.PublicKey) error {
	var refused string // why the host's certificate was refused
	if cert, ok := key.(*ssh.Certificate); ok {
		why, err := k.checkCert(cert)
		if err != nil || why == "" {
			return err
		}
		k.logger.Info("host certificate refused: checking its key as a plain key", "host", k.name, "reason", why)
		refused, key = why, cert.Key
	}
	e := &HostKeyError{Host: k.name, Got: ssh.FingerprintSHA256(key), GotType: key.Type(), Cert: refused}
	err := k.db(k.lookup, remote, key)
	var (
		want []xknownhosts.KnownKey
		ke   *xknownhosts.KeyError
		re   *xknownhosts.RevokedError
	)
	switch {
	case err == nil && slices.ContainsFunc(k.known, func(w xknownhosts.KnownKey) bool { return sameKey(w.Key, key) }):
		return nil
	case err == nil:
		// knownhosts matched it to a CA's line: the key is the CA's own, which is no host key.
		want = k.known
	case errors.As(err, &re):
		e.Revoked = true
		e.Line = place(re.Revoked)
		return e
	case errors.As(err, &ke):
		want = k.plain(ke.Want)
	default:
		return fmt.Errorf("check the host key of %s: %w", k.name, err)
	}
	if len(want) == 0 {
		if k.h.StrictHostKeyChecking == "accept-new" || k.h.StrictHostKeyChecking == "no" {
			if err := k.add(key); err != nil {
				return fmt.Errorf("add the host key of %s to known_hosts: %w", k.name, err)
			}
			k.logger.Info("added host key to known_hosts", "host", k.name, "key", e.Got, "file", k.h.KnownHostsFiles[0])
			return nil
		}
		e.Hint = k.trustHint(key)
		return e
	}
	for _, w := range want {
		e.Known = append(e.Known, ssh.FingerprintSHA256(w.Key))
		e.Lines = append(e.Lines, place(w))
	}
	e.Line = e.Lines[0]
	e.Hint = fmt.Sprintf("if you know its key changed, remove the old one with: ssh-keygen -R '%s' -f %s, then check the new one with: ssh %s",
		k.name, want[0].Filename, k.h.Alias)
	return e
}

// checkCert checks a host certificate as ssh does: it says why it refuses one ("" when it
// accepts it), and returns a [*HostKeyError] when the certificate's key or its CA is revoked,
// which ends the check: ssh does not fall back to the plain key then.
func (k *Checker) checkCert(cert *ssh.Certificate) (refused string, err error) {
	for _, r := range k.revoked {
		var why string
		switch {
		case sameKey(r.Key, cert.Key):
			why = "its key is marked @revoked"
		case sameKey(r.Key, cert.SignatureKey):
			why = fmt.Sprintf("its CA, %s, is marked @revoked", describeKey(cert.SignatureKey))
		default:
			continue
		}
		return "", &HostKeyError{Host: k.name, Got: ssh.FingerprintSHA256(cert.Key), GotType: cert.Type(),
			Cert: why, Revoked: true, Line: place(r)}
	}
	if cert.CertType != ssh.HostCert {
		return "it is not a host certificate", nil
	}
	if !slices.ContainsFunc(k.cas, func(ca xknownhosts.KnownKey) bool { return sameKey(ca.Key, cert.SignatureKey) }) {
		return fmt.Sprintf("it is signed by %s, which known_hosts does not hold as @cert-authority for %s", describeKey(cert.SignatureKey), k.name), nil
	}
	now := time.Now().Unix()
	if after := int64(cert.ValidAfter); after < 0 || now < after {
		return fmt.Sprintf("it is not valid before %s (check the clocks)", certTime(cert.ValidAfter)), nil
	}
	if before := int64(cert.ValidBefore); cert.ValidBefore != ssh.CertTimeInfinity && (before < 0 || now >= before) {
		return fmt.Sprintf("it expired at %s (the host needs a new one)", certTime(cert.ValidBefore)), nil
	}
	name, _, _ := net.SplitHostPort(k.lookup)
	if !slices.Contains(cert.ValidPrincipals, name) {
		return fmt.Sprintf("it is not valid for %s (it names %s)", name, principals(cert.ValidPrincipals)), nil
	}
	// The signature and critical options, in the library's words.
	var cc ssh.CertChecker
	if err := cc.CheckCert(name, cert); err != nil {
		return fmt.Sprintf("it does not check: %s", termsafe.Escape(err.Error(), 200)), nil
	}
	return "", nil
}

func sameKey(a, b ssh.PublicKey) bool { return bytes.Equal(a.Marshal(), b.Marshal()) }

// describeKey names a key for people: "ssh-ed25519 SHA256:…".
func describeKey(k ssh.PublicKey) string { return k.Type() + " " + ssh.FingerprintSHA256(k) }

// certTime writes a certificate's time bound in UTC.
func certTime(t uint64) string {
	if t > math.MaxInt64 {
		return "the end of time"
	}
	return time.Unix(int64(t), 0).UTC().Format("2006-01-02 15:04:05 UTC")
}

// principals writes a certificate's principals, which come from the host, safe to print.
func principals(ps []string) string {
	if len(ps) == 0 {
		return "none"
	}
	var out []string
	for i, p := range ps {
		if i == 5 {
			out = append(out, "…")
			break
		}
		out = append(out, termsafe.Quote(termsafe.Escape(p, 100)))
	}
	return strings.Join(out, ", ")
}

// matchHostPatterns says whether the known_hosts host field (its comma-separated patterns)
// matches host and port, as knownhosts matches it: a hashed name (the whole field), or
// patterns with * and ?, "[host]:port" for a port other than 22, and "!" to exclude.
func matchHostPatterns(patterns []string, host, port string) bool {
	if len(patterns) > 0 && strings.HasPrefix(patterns[0], "|") {
		// knownhosts reads a field that starts with | as one hashed name, commas and all.
		return matchHashed(strings.Join(patterns, ","), xknownhosts.Normalize(net.JoinHostPort(host, port)))
	}
	matched := false
	for _, p := range patterns {
		if p == "" {
			continue
		}
		negate := p[0] == '!'
		if negate {
			p = p[1:]
		}
		if p == "" {
			return false // knownhosts refuses the line
		}
		ph, pp, err := net.SplitHostPort(p)
		if err != nil {
			if p[0] == '[' {
				return false // knownhosts refuses the line
			}
			ph, pp = p, "22"
		}
		if pp != port || !wildcardMatch(ph, host) {
			continue
		}
		if negate {
			return false
		}
		matched = true
	}
	return matched
}

// matchHashed says whether a hashed known_hosts name, "|1|salt|hash", is name's.
func matchHashed(hashed, name string) bool {
	parts := strings.Split(hashed, "|")
	if len(parts) != 4 || parts[1] != "1" {
		return false
	}
	salt, err1 := base64.StdEncoding.DecodeString(parts[2])
	hash, err2 := base64.StdEncoding.DecodeString(parts[3])
	if err1 != nil || err2 != nil {
		return false
	}
	mac := hmac.New(sha1.New, salt)
	mac.Write([]byte(name))
	return hmac.Equal(mac.Sum(nil), hash)
}

// wildcardMatch matches s against a pattern where * stands for any text and ? for one byte, as
// knownhosts matches the plain lines, so that a pattern means the same on every line: there, s
// must not be empty, and a * at the pattern's end stands for at least one byte ("a*" does not
// match "a", which it would in OpenSSH). It takes time len(pattern)·len(s), where knownhosts'
// backtracking takes time exponential in the number of *.
//
// match[i] says whether s[i:] matches the part of the pattern after the current byte; the
// pattern is read from its end.
func wildcardMatch(pattern, s string) bool {
	if s == "" {
		return pattern == ""
	}
	match := make([]bool, len(s)+1)
	next := make([]bool, len(s)+1)
	match[len(s)] = true // the empty pattern matches only the empty text
	for p := len(pattern) - 1; p >= 0; p-- {
		copy(next, match)
		match[len(s)] = false // a pattern that is not empty never matches the empty text
		switch c := pattern[p]; {
		case c == '*' && p == len(pattern)-1:
			for i := range len(s) {
				match[i] = true
			}
		case c == '*':
			// s[i:] matches when the rest matches s[j:] for some j with i <= j < len(s).
			any := false
			for i := len(s) - 1; i >= 0; i-- {
				any = any || next[i]
				match[i] = any
			}
		default:
			for i := range len(s) {
				match[i] = (c == '?' || c == s[i]) && next[i+1]
			}
		}
	}
	return match[0]
}

// trustHint is the command that trusts the host's key, for a person who checked it.
func (k *Checker) trustHint(key ssh.PublicKey) string {
	manual := fmt.Sprintf("run ssh %s once and answer yes", k.h.Alias)
	if len(k.h.KnownHostsFiles) == 0 {
		return "if that is its key, " + manual
	}
	if k.h.HostKeyAlias != "" || len(k.h.Jump) > 0 {
		// ssh-keyscan would record the key under the wrong name, or cannot reach the host.
		return "if that is its key, " + manual
	}
	var cmd strings.Builder
	cmd.WriteString("ssh-keyscan")
	if k.h.Port != 22 {
		fmt.Fprintf(&cmd, " -p %d", k.h.Port)
	}
	if k.h.HashKnownHosts {
		cmd.WriteString(" -H")
	}
	fmt.Fprintf(&cmd, " -t %s %s >> %s", keyscanType(key.Type()), strings.ToLower(k.h.HostName), k.h.KnownHostsFiles[0])
	return fmt.Sprintf("if that is its key, trust it with: %s, or %s", cmd.String(), manual)
}

// keyscanType is ssh-keyscan's -t name for a key type.
func keyscanType(t string) string {
	switch {
	case t == ssh.KeyAlgoED25519:
		return "ed25519"
	case t == ssh.KeyAlgoRSA:
		return "rsa"
	case strings.HasPrefix(t, "ecdsa-"):
		return "ecdsa"
	}
	return t
}

// add appends the host's key to the first user known_hosts file, creating it (0600, in a 0700
// folder) if need be; an existing file keeps its mode.
func (k *Checker) add(key ssh.PublicKey) error {
	if len(k.h.KnownHostsFiles) == 0 {
		return errors.New("no user known_hosts file to add it to")
	}
	file := k.h.KnownHostsFiles[0]
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	name := k.name
	if k.h.HashKnownHosts {
		name = xknownhosts.HashHostname(name)
	}
	line := name + " " + key.Type() + " " + base64.StdEncoding.EncodeToString(key.Marshal()) + "\n"
	f, err := os.OpenFile(file, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	// Start on a line of its own when the file does not end with one.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err != nil && err != io.EOF {
			return err
		}
		if last[0] != '\n' {
			line = "\n" + line
		}
	}
	if _, err := f.WriteString(line); err != nil {
		return err
	}
	return f.Close()
}
