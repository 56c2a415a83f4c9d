// Package knownhosts checks an SSH host's key against its known_hosts files as OpenSSH's ssh
// checks it, for one host that package sshconfig resolved: its known_hosts files, HostKeyAlias,
// StrictHostKeyChecking and HashKnownHosts. It reads the files with golang.org/x/crypto's
// ssh/knownhosts, and adds what that package leaves to its callers: the host key algorithms
// to ask for, host certificates checked against @cert-authority lines with the reason for a
// refusal, @revoked keys and CAs, unknown keys added under accept-new, and errors that say what
// a person should run.
//
//	k, err := knownhosts.New(host, logger)
//	cfg := &ssh.ClientConfig{HostKeyCallback: k.Check, HostKeyAlgorithms: k.Algorithms(), …}
//
// # Host keys
//
// A host's key must be one its known_hosts files hold (hashed names and [host]:port entries
// included), under its HostKeyAlias when it has one. The host key algorithms asked for put the
// types known for the host first, so that a host with several keys shows a known one rather than
// one that would look like a change. Then:
//
//   - an unknown host under StrictHostKeyChecking ask or yes (the default is ask) is refused with
//     a [*HostKeyError] that gives the key's fingerprint and the command that trusts it
//     (ssh-keyscan -p PORT -t TYPE HOST >> FILE, or running ssh HOST once);
//   - under accept-new or no, its key is appended to the first user known_hosts file (created
//     0600 if need be; an existing file keeps its mode), hashed under HashKnownHosts yes;
//   - a changed key is always refused, whatever StrictHostKeyChecking says, with both
//     fingerprints and the file:line of the known key, and the ssh-keygen -R command to remove
//     it once a person has checked. A host that no longer offers any type of key known_hosts
//     holds for it counts as changed too, and a key marked @revoked is refused.
//
// # Host certificates
//
// When known_hosts holds a CA for the host (@cert-authority PATTERNS KEY, the patterns matched
// as for other lines), host certificates are asked for first, of every type, and a certificate
// the host shows is accepted when all of this holds: it is a host certificate, signed by such a
// CA; it is valid now (between its -V bounds); the host's name (its HostKeyAlias if it has one,
// else its HostName) is one of its principals; its signature and critical options check.
// Without a CA for the host no certificate is asked for. A certificate whose key or CA is marked
// @revoked is refused outright. Any other certificate that fails is refused, and then, as ssh
// does, its key is checked as a plain key, by the rules above: it is accepted if known_hosts
// holds it, added under accept-new or no, and otherwise the [*HostKeyError] says first why the
// certificate was refused ([HostKeyError.Cert]): "host certificate of [10.0.0.7]:2222 is
// refused: it expired at 2026-01-02 00:00:00 UTC (the host needs a new one); its key, checked
// as a plain key, is unknown: …". A CA's own key is never taken for a host's key (x/crypto's
// knownhosts alone would take it).
//
// Host patterns are matched as golang.org/x/crypto's knownhosts matches them, for CA lines too:
// a pattern without [ ]:port stands for port 22 only, so a host on another port needs
// [host]:port (ssh matches "*" against "[host]:port" as a whole).
//
// # Security
//
// A changed key is never accepted, and an unknown one only under accept-new or no, as the
// user's ssh_config says. Nothing prompts. What the host shows (a certificate's principals, a
// library's refusal) reaches an error escaped, and host names are checked (by sshconfig) before
// they are put in a hint's command.
package knownhosts
