package forward

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/forward/knownhosts"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// hostCA is a CA of host certificates, made by ssh-keygen for a test.
type hostCA struct {
	t   testing.TB
	key string // the private key file
	pub ssh.PublicKey
}

func newHostCA(t testing.TB, name string) *hostCA {
	t.Helper()
	key := filepath.Join(t.TempDir(), name)
	return &hostCA{t: t, key: key, pub: keygen(t, key, "ed25519", "")}
}

// sign makes a host certificate of the public key file pub for principals ("a,b"), with more
// ssh-keygen arguments (-V …), and returns the certificate's file.
func (ca *hostCA) sign(pub, principals string, more ...string) string {
	ca.t.Helper()
	args := append([]string{"-q", "-s", ca.key, "-I", "krad-test", "-h", "-n", principals}, more...)
	if out, err := exec.Command("ssh-keygen", append(args, pub)...).CombinedOutput(); err != nil {
		ca.t.Fatalf("ssh-keygen -s: %v: %s", err, out)
	}
	return strings.TrimSuffix(pub, ".pub") + "-cert.pub"
}

// line is the known_hosts line that trusts the CA for the host patterns.
func (ca *hostCA) line(patterns string) string {
	return "@cert-authority " + patterns + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(ca.pub)))
}

// Hosts that show a certificate, and a known_hosts that holds only their CA.
func TestHostCertificate(t *testing.T) {
	t.Parallel()
	ca, other := newHostCA(t, "ca"), newHostCA(t, "other_ca")
	hostPattern := func(s *sshdtest.Server) string { return "[127.0.0.1]:" + strconv.Itoa(s.Port) }
	for _, tc := range []struct {
		name   string
		sign   func(pub string) string           // the certificate sshd shows; none if nil
		trust  func(s *sshdtest.Server) []string // known_hosts
		config []string                          // more lines of the Host block
		// connects, or fails with a *knownhosts.HostKeyError whose Cert says want ("" for no certificate
		// checked).
		connects bool
		want     string
		revoked  bool
		// added says that the plain key is added to known_hosts, as ssh adds it.
		added bool
	}{
		{
			name:     "signed by the CA known_hosts holds",
			sign:     func(pub string) string { return ca.sign(pub, "127.0.0.1,localhost") },
			trust:    func(s *sshdtest.Server) []string { return []string{ca.line(hostPattern(s))} },
			connects: true,
		},
		{
			name:     "under its HostKeyAlias",
			sign:     func(pub string) string { return ca.sign(pub, "build.example.com") },
			trust:    func(*sshdtest.Server) []string { return []string{ca.line("*.example.com")} },
			config:   []string{"HostKeyAlias build.example.com"},
			connects: true,
		},
		{
			name:  "signed by another CA",
			sign:  func(pub string) string { return other.sign(pub, "127.0.0.1") },
			trust: func(s *sshdtest.Server) []string { return []string{ca.line(hostPattern(s))} },
			want:  "it is signed by ssh-ed25519 " + ssh.FingerprintSHA256(other.pub) + ", which known_hosts does not hold as @cert-authority for [127.0.0.1]:",
		},
		{
			// No CA for the host: no certificate is asked for, and its plain key is unknown.
			name: "a CA of other hosts",
			sign: func(pub string) string { return ca.sign(pub, "127.0.0.1") },
			trust: func(s *sshdtest.Server) []string {
				return []string{ca.line("*.example.com,[127.0.0.2]:" + strconv.Itoa(s.Port))}
			},
		},
		{
			name:  "expired",
			sign:  func(pub string) string { return ca.sign(pub, "127.0.0.1", "-V", "20200101000000Z:20200102000000Z") },
			trust: func(s *sshdtest.Server) []string { return []string{ca.line(hostPattern(s))} },
			want:  "it expired at 2020-01-02 00:00:00 UTC (the host needs a new one)",
		},
		{
			name:  "not yet valid",
			sign:  func(pub string) string { return ca.sign(pub, "127.0.0.1", "-V", "+1d:+2d") },
			trust: func(s *sshdtest.Server) []string { return []string{ca.line(hostPattern(s))} },
			want:  "it is not valid before ",
		},
		{
			name:  "for another host",
			sign:  func(pub string) string { return ca.sign(pub, "other.example.com,localhost") },
			trust: func(s *sshdtest.Server) []string { return []string{ca.line(hostPattern(s))} },
			want:  "it is not valid for 127.0.0.1 (it names other.example.com, localhost)",
		},
		{
			name: "its CA revoked",
			sign: func(pub string) string { return ca.sign(pub, "127.0.0.1") },
			trust: func(s *sshdtest.Server) []string {
				return []string{ca.line(hostPattern(s)), "@revoked * " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(ca.pub)))}
			},
			want:    "its CA, ssh-ed25519 " + ssh.FingerprintSHA256(ca.pub) + ", is marked @revoked",
			revoked: true,
		},
		{
			// As ssh does: a refused certificate leaves its key to be checked as a plain key.
			name:     "expired, under accept-new",
			sign:     func(pub string) string { return ca.sign(pub, "127.0.0.1", "-V", "20200101000000Z:20200102000000Z") },
			trust:    func(s *sshdtest.Server) []string { return []string{ca.line(hostPattern(s))} },
			config:   []string{"StrictHostKeyChecking accept-new"},
			added:    true,
			connects: true,
		},
		{
			// knownhosts alone would take the host's plain key for the CA's.
			name:  "a CA's key shown as a plain host key",
			trust: func(s *sshdtest.Server) []string { return []string{"@cert-authority " + s.KnownHostsLine(0)} },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			o := sshdtest.Options{AuthorizedKeys: []string{e.key + ".pub"}}
			if tc.sign != nil {
				o.Certify = tc.sign
			}
			s := sshdtest.Start(t, o)
			e.writeConfig(hostBlock("build", s, tc.config...))
			trusted := tc.trust(s)
			e.trust(trusted...)

			r := run(t, e.cfg("build"))
			if tc.connects {
				st, _ := r.connected(0)
				carries(t, st.Addr)
				b, _ := os.ReadFile(e.knownHosts)
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				want := trusted
				if tc.added {
					want = append(slices.Clip(want), s.KnownHostsLine(0))
				}
				if !slices.Equal(lines, want) {
					t.Errorf("known_hosts =\n%s\nwant\n%s", b, strings.Join(want, "\n"))
				}
				return
			}
			err := r.failed()
			var hk *knownhosts.HostKeyError
			if !errors.As(err, &hk) {
				t.Fatalf("err = %v, want a *knownhosts.HostKeyError", err)
			}
			switch {
			case tc.want == "" && hk.Cert != "":
				t.Errorf("err = %q, want no certificate checked", err)
			case !strings.Contains(hk.Cert, tc.want) || !strings.Contains(err.Error(), tc.want):
				t.Errorf("err = %q (Cert %q), want its certificate refused saying %q", err, hk.Cert, tc.want)
			}
			if hk.Revoked != tc.revoked || hk.Unknown() == tc.revoked {
				t.Errorf("Revoked %v, Unknown %v; want Revoked %v", hk.Revoked, hk.Unknown(), tc.revoked)
			}
			fp := ssh.FingerprintSHA256(s.HostKeys[0])
			if hk.Got != fp {
				t.Errorf("Got = %s, want the host's key %s", hk.Got, fp)
			}
			if tc.want != "" && !tc.revoked && !strings.Contains(err.Error(), "host certificate of [127.0.0.1]:"+strconv.Itoa(s.Port)+" is refused: ") {
				t.Errorf("err = %q, want it to start with the certificate refused", err)
			}
		})
	}
}
