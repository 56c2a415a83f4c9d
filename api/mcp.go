package api

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MCP relays `krad mcp` of the static krad on an SSH host, which has no MCP server of its own (the
// MCP SDK stays out of what is copied to every host), to a `krad mcp` that the app runs for it:
// the same command, with the same caller, each of its requests made through the same way into
// the bus as the host's own. The host's krad mcp sends what it reads on its stdin and writes what
// the app's sends back on its stdout; the MCP messages themselves are opaque bytes here.
//
// It keeps the spec's transport: one request per connection, one answer line, within the 10
// seconds of most requests. A request that carries no input waits up to [MCPPoll] for output, as
// Askpass waits for its answer; one that carries input is answered at once. Both directions are
// counted in bytes, so a request whose answer was lost is made again without loss or repeat.

// MCPBody is the body of MCP. Session "" opens a session (answered with its id); the others name
// it. In is what krad mcp read on its stdin from byte InAt on: the app takes what it did not take
// yet. Got is how many bytes of output krad mcp has written: the app drops those and sends what
// follows. End says that krad mcp's stdin ended with In: the app's krad mcp reads its end.
type MCPBody struct {
	Session string `json:"session,omitempty"`
	// Open is a random id krad mcp picks once, for the requests that open its session: made
	// again, its answer lost, such a request finds the session it opened (the same caller by
	// the same way in) rather than opening another. Only with Session ""; 32 lowercase hex
	// digits, as a session's id.
	Open string `json:"open,omitempty"`
	// Home is the host's HOME, with which the tools' text shows paths as ~/…, as krad does
	// there. Only with Session "".
	Home string `json:"home,omitempty"`
	In   []byte `json:"in,omitempty"`
	InAt int64  `json:"in_at,omitempty"`
	Got  int64  `json:"got,omitempty"`
	End  bool   `json:"end,omitempty"`
}

// MCPAnswer is the answer to MCP, {"MCP":{…}}. Taken is how many bytes of input the app has
// taken in all: krad mcp sends again what follows. Out is output from byte OutAt on. Done says that
// the app's krad mcp ended and Out is the last of its output; Exit is then its exit code and
// Stderr what it printed on stderr, for the host's krad mcp to give as its own.
type MCPAnswer struct {
	Session string `json:"session"`
	Taken   int64  `json:"taken"`
	Out     []byte `json:"out,omitempty"`
	OutAt   int64  `json:"out_at"`
	Done    bool   `json:"done,omitempty"`
	Exit    int    `json:"exit,omitempty"`
	Stderr  string `json:"stderr,omitempty"`
}

// AnswerMCP is the answer to MCP: an [MCPAnswer].
const AnswerMCP AnswerName = "MCP"

// Limits and timing of MCP.
const (
	// MaxMCPIn is the most input one request carries: base64 in JSON, with its envelope, it fits
	// the spec's 64 KiB request line.
	MaxMCPIn = 40 << 10
	// MaxMCPOut is the most output one answer carries.
	MaxMCPOut = 1 << 20
	// MaxMCPStderr is the most of the app's krad mcp's stderr the last answer carries.
	MaxMCPStderr = 8 << 10
	// MCPPoll is how long a request without input waits for output before it is answered
	// without, well within the 10-second deadline.
	MCPPoll = 4 * time.Second
	// MCPIdle is how long a session lives with no request: then its krad mcp is stopped, as
	// when its input ends. A krad mcp that is running asks at least every MCPPoll; it keeps
	// asking for MCPIdle through a link that does not answer, which the app notices dead (its
	// keepalives: 45 s by default) and connects again within that time.
	MCPIdle = 2 * time.Minute
)

func validateMCP(b *MCPBody) error {
	if b.Session != "" {
		if _, err := ParseToken(b.Session); err != nil {
			return errors.New("session is not an id the app gave: those are 32 lowercase hex digits")
		}
	}
	if b.Open != "" {
		if b.Session != "" {
			return errors.New("open goes with the requests that open a session")
		}
		if _, err := ParseToken(b.Open); err != nil {
			return errors.New("open is an id krad picks: 32 lowercase hex digits")
		}
	}
	if len(b.In) > MaxMCPIn {
		return fmt.Errorf("in is at most %d KiB", MaxMCPIn>>10)
	}
	if b.InAt < 0 || b.Got < 0 {
		return errors.New("in_at and got count bytes: they cannot be negative")
	}
	if b.Home != "" {
		if b.Session != "" {
			return errors.New("home goes with the request that opens a session")
		}
		if len(b.Home) > 4096 || !strings.HasPrefix(b.Home, "/") || !utf8.ValidString(b.Home) || strings.ContainsFunc(b.Home, unicode.IsControl) {
			return errors.New("home must be an absolute path of at most 4096 bytes of UTF-8 with no control characters")
		}
	}
	if b.Session == "" && (b.InAt != 0 || b.Got != 0) {
		return errors.New("a request that opens a session starts at byte 0 both ways")
	}
	return nil
}
