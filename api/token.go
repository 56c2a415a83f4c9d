package api

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
)

// Redacted is what a [Token] prints in place of its value.
const Redacted = "[REDACTED]"

// TokenLen is the length of a well-formed token: 128 bits as lowercase hex.
const TokenLen = 32

// Token is a bus or lead token. Its zero value is the empty token, which matches nothing.
//
// A Token never prints its value: String, GoString, Format, MarshalJSON, MarshalText and LogValue
// all give [Redacted]. [Token.Reveal] is the one way to the value.
type Token struct {
	value string
}

// NewToken makes a fresh random 128-bit token from crypto/rand.
func NewToken() (Token, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Token{}, fmt.Errorf("make token: %w", err)
	}
	return Token{value: hex.EncodeToString(b[:])}, nil
}

// ErrMalformedToken is returned by [ParseToken] for anything but 32 lowercase hex digits.
var ErrMalformedToken = errors.New("a token is 32 lowercase hex digits")

// ParseToken checks that s is a well-formed token (32 lowercase hex digits) and wraps it.
// The error never contains s.
func ParseToken(s string) (Token, error) {
	if len(s) != TokenLen {
		return Token{}, ErrMalformedToken
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return Token{}, ErrMalformedToken
		}
	}
	return Token{value: s}, nil
}

// tokenOf wraps whatever a client sent, well-formed or not, so that it can be compared and is
// never printed.
func tokenOf(s string) Token { return Token{value: s} }

// Reveal returns the token's value. Call it only to put the token on the wire or into a file
// that is owner-only.
func (t Token) Reveal() string { return t.value }

// IsZero reports whether t is the empty token.
func (t Token) IsZero() bool { return t.value == "" }

// Equal compares two tokens in constant time (for tokens of the same length). An empty token is
// equal to nothing, not even another empty token.
func (t Token) Equal(u Token) bool {
	if t.value == "" || u.value == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(t.value), []byte(u.value)) == 1
}

func (Token) String() string   { return Redacted }
func (Token) GoString() string { return Redacted }

// Format prints [Redacted] under every verb, %x and %q included.
func (Token) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(Redacted)) }

// LogValue keeps the token out of slog output.
func (Token) LogValue() slog.Value { return slog.StringValue(Redacted) }

// MarshalText keeps the token out of any encoder that uses text marshalling.
func (Token) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// MarshalJSON keeps the token out of any JSON that is not an envelope on the wire.
func (Token) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }
