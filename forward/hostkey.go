package forward

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// hostKeys checks one host's key against its known_hosts files.
type hostKeys struct {
	h      *Host
	name   string // the host's name in known_hosts: "host", "[host]:port", or the HostKeyAlias
	lookup string // the address knownhosts looks name up by: "host:port"
	db     ssh.HostKeyCallback
	known  []ssh.PublicKey // the keys known for the host, in file order
	logger *slog.Logger
}

// loadHostKeys reads h's known_hosts files. Files that do not exist count as empty.
func loadHostKeys(h *Host, logger *slog.Logger) (*hostKeys, error) {
	k := &hostKeys{h: h, logger: logger}
	if h.HostKeyAlias != "" {
		k.lookup = net.JoinHostPort(h.HostKeyAlias, "22")
	} else {
		k.lookup = net.JoinHostPort(strings.ToLower(h.HostName), strconv.Itoa(h.Port))
	}
	k.name = knownhosts.Normalize(k.lookup)

	var files []string
	for _, f := range slices.Concat(h.KnownHostsFiles, h.GlobalKnownHostsFiles) {
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("known_hosts: %w", err)
		}
	}
	db, err := knownhosts.New(files...)
	if err != nil {
		return nil, &ConfigError{Host: h.Alias, Key: "UserKnownHostsFile", Reason: err.Error()}
	}
	k.db = db

	// knownhosts has no call that lists a host's keys, but a mismatch lists them all: ask it
	// about a key no host has.
	probe, _ := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	var ke *knownhosts.KeyError
	if errors.As(db(k.lookup, dummyAddr, probe), &ke) {
		for _, w := range ke.Want {
			k.known = append(k.known, w.Key)
		}
	}
	return k, nil
}

var dummyAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 22}

// algorithms returns the host key algorithms to offer, those of the keys known for the host
// first, so that a host with several keys shows one that known_hosts holds rather than one it
// does not, which would read as a changed key. Certificates are not offered: host keys are
// checked against known_hosts' keys only.
func (k *hostKeys) algorithms() []string {
	var algos []string
	add := func(a ...string) {
		for _, x := range a {
			if !slices.Contains(algos, x) {
				algos = append(algos, x)
			}
		}
	}
	for _, key := range k.known {
		if key.Type() == ssh.KeyAlgoRSA {
			add(ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256)
			continue
		}
		add(key.Type())
	}
	for _, a := range ssh.SupportedAlgorithms().HostKeys {
		if !strings.Contains(a, "-cert-") {
			add(a)
		}
	}
	return algos
}

// check is the ssh.HostKeyCallback: the key must be one known_hosts holds for the host. An
// unknown host is added under StrictHostKeyChecking accept-new or no, and refused with a
// [*HostKeyError] otherwise; a changed key is always refused.
func (k *hostKeys) check(_ string, remote net.Addr, key ssh.PublicKey) error {
	err := k.db(k.lookup, remote, key)
	if err == nil {
		return nil
	}
	e := &HostKeyError{Host: k.name, Got: ssh.FingerprintSHA256(key), GotType: key.Type()}
	var (
		ke *knownhosts.KeyError
		re *knownhosts.RevokedError
	)
	switch {
	case errors.As(err, &re):
		e.Revoked = true
		e.Line = fmt.Sprintf("%s:%d", re.Revoked.Filename, re.Revoked.Line)
		return e
	case errors.As(err, &ke) && len(ke.Want) == 0:
		if k.h.StrictHostKeyChecking == "accept-new" || k.h.StrictHostKeyChecking == "no" {
			if err := k.add(key); err != nil {
				return fmt.Errorf("add the host key of %s to known_hosts: %w", k.name, err)
			}
			k.logger.Info("added host key to known_hosts", "host", k.name, "key", e.Got, "file", k.h.KnownHostsFiles[0])
			return nil
		}
		e.Hint = k.trustHint(key)
		return e
	case errors.As(err, &ke):
		for _, w := range ke.Want {
			e.Known = append(e.Known, ssh.FingerprintSHA256(w.Key))
			e.Lines = append(e.Lines, fmt.Sprintf("%s:%d", w.Filename, w.Line))
		}
		e.Line = e.Lines[0]
		e.Hint = fmt.Sprintf("if you know its key changed, remove the old one with: ssh-keygen -R '%s' -f %s, then check the new one with: ssh %s",
			k.name, ke.Want[0].Filename, k.h.Alias)
		return e
	}
	return fmt.Errorf("check the host key of %s: %w", k.name, err)
}

// trustHint is the command that trusts the host's key, for a person who checked it.
func (k *hostKeys) trustHint(key ssh.PublicKey) string {
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
func (k *hostKeys) add(key ssh.PublicKey) error {
	if len(k.h.KnownHostsFiles) == 0 {
		return errors.New("no user known_hosts file to add it to")
	}
	file := k.h.KnownHostsFiles[0]
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	name := k.name
	if k.h.HashKnownHosts {
		name = knownhosts.HashHostname(name)
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
