package forward

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/krad-ade/krad/forward/sshconfig"
)

// agentDialTimeout bounds reaching the agent's socket; a socket file with no agent behind it
// refuses at once, so this only matters for an agent that accepted and hangs.
const agentDialTimeout = 2 * time.Second

// keys are the keys to offer one host, agent keys first, and what is needed to explain a
// failure.
type keys struct {
	signers   []ssh.Signer
	tried     []string // the keys offered, for AuthError
	encrypted []string // identity files with a passphrase that no agent holds
	noAgent   string
	agentConn net.Conn
}

func (k *keys) close() {
	if k.agentConn != nil {
		k.agentConn.Close()
	}
}

// authError explains a failed authentication of h with k.
func (k *keys) authError(h *sshconfig.Host, err error) *AuthError {
	return &AuthError{User: h.User, Host: h.String(), Tried: k.tried, Encrypted: k.encrypted, NoAgent: k.noAgent, Err: err}
}

// loadKeys gathers the keys to offer h: the agent's, then the identity files'. Under
// IdentitiesOnly the agent's keys are only those of the identity files. An identity file that
// needs a passphrase is never prompted for: the agent's copy is used if it holds one, else it is
// noted for the error.
func loadKeys(h *sshconfig.Host, sock string) (*keys, error) {
	k := &keys{}
	switch {
	case h.IdentityAgent == sshconfig.None:
		sock, k.noAgent = "", "IdentityAgent none"
	case h.IdentityAgent != "":
		sock = h.IdentityAgent
	case sock == "":
		k.noAgent = "SSH_AUTH_SOCK is not set"
	}

	var agentSigners []ssh.Signer
	if sock != "" {
		conn, err := net.DialTimeout("unix", sock, agentDialTimeout)
		if err != nil {
			k.noAgent = fmt.Sprintf("cannot reach the agent at %s: %v", sock, errors.Unwrap(err))
		} else {
			k.agentConn = conn
			conn.SetDeadline(time.Now().Add(agentDialTimeout))
			agentSigners, err = agent.NewClient(conn).Signers()
			conn.SetDeadline(time.Time{})
			if err != nil {
				k.noAgent = fmt.Sprintf("the agent at %s did not list its keys: %v", sock, err)
				agentSigners = nil
			}
		}
	}
	inAgent := func(pub ssh.PublicKey) bool {
		for _, s := range agentSigners {
			if bytes.Equal(s.PublicKey().Marshal(), pub.Marshal()) {
				return true
			}
		}
		return false
	}

	var (
		filePubs    []ssh.PublicKey // the identity files' public keys, for IdentitiesOnly
		fileSigners []ssh.Signer
		fileNames   []string
	)
	for _, path := range h.IdentityFiles {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			// ssh accepts an IdentityFile naming only a public key whose private half is in
			// the agent.
			if pub := readPublicKey(path + ".pub"); pub != nil {
				filePubs = append(filePubs, pub)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read identity file: %w", err)
		}
		signer, err := ssh.ParsePrivateKey(data)
		var missing *ssh.PassphraseMissingError
		switch {
		case errors.As(err, &missing):
			pub := missing.PublicKey
			if pub == nil {
				pub = readPublicKey(path + ".pub")
			}
			if pub != nil {
				filePubs = append(filePubs, pub)
			}
			if pub == nil || !inAgent(pub) {
				k.encrypted = append(k.encrypted, path)
			}
		case err != nil:
			// A key type this package cannot use (a security key, a DSA key): ssh would try
			// it, this package cannot; the others may still do.
			continue
		default:
			filePubs = append(filePubs, signer.PublicKey())
			if !inAgent(signer.PublicKey()) {
				fileSigners = append(fileSigners, signer)
				fileNames = append(fileNames, path)
			}
		}
	}

	for _, s := range agentSigners {
		if h.IdentitiesOnly && !containsKey(filePubs, s.PublicKey()) {
			continue
		}
		k.signers = append(k.signers, s)
		k.tried = append(k.tried, fmt.Sprintf("agent key %s", ssh.FingerprintSHA256(s.PublicKey())))
	}
	k.signers = append(k.signers, fileSigners...)
	k.tried = append(k.tried, fileNames...)
	return k, nil
}

func containsKey(keys []ssh.PublicKey, key ssh.PublicKey) bool {
	for _, x := range keys {
		if bytes.Equal(x.Marshal(), key.Marshal()) {
			return true
		}
	}
	return false
}

// readPublicKey reads an authorized_keys-style public key file; nil if there is none.
func readPublicKey(path string) ssh.PublicKey {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		return nil
	}
	return pub
}

// isAuthFailure says whether err, from a handshake, means the host accepted none of the keys.
// x/crypto reports it with an unexported error, so its text is what there is.
func isAuthFailure(err error) bool {
	s := err.Error()
	return strings.Contains(s, "ssh: unable to authenticate") || strings.Contains(s, "Too many authentication failures")
}
