package tmux

import (
	"errors"
	"strings"

	"github.com/krad-ade/krad/internal/termsafe"
)

// The errors callers branch on. Errors from a Client wrap them, so test with [errors.Is].
var (
	// ErrClosed: the client has ended, by [Client.Close] or because the stream did. A command that
	// fails because the stream ended wraps both ErrClosed and the reason [Client.Err] gives, so
	// errors.As finds an [*ExitError] in it too.
	ErrClosed = errors.New("tmux client closed")

	// ErrTooLong: a line longer than [MaxLine], or a reply longer than [MaxReply] in all. The
	// client stops reading and ends: nothing after it could be trusted to be framed right.
	ErrTooLong = errors.New("too long")

	// ErrProtocol: tmux answered out of step, with a reply when no command of ours was waiting.
	// The client ends, because every later reply would go to the wrong command. It happens when a
	// command makes tmux run further commands (see [Command]), or when the stream is not tmux.
	ErrProtocol = errors.New("tmux replies out of step")

	// ErrNoAnswer: tmux left a command unanswered for longer than [Client.Watch] allows. The
	// client ends: a server that answers nothing cannot be driven, and a new attach may find it
	// answering again.
	ErrNoAnswer = errors.New("tmux stopped answering")

	// ErrMalformed: a notification line that does not parse. It comes in [Unknown.Err] and never
	// ends the client.
	ErrMalformed = errors.New("malformed notification")

	// ErrRefused: Command refused to send a command, because it holds no command name, a NUL
	// byte, or names a command that makes tmux answer with more than one reply (see [Command]).
	ErrRefused = errors.New("tmux command refused")
)

// CommandError is tmux's answer to a command that failed: the lines between %begin and %error,
// such as "unknown command: bogus" or "can't find window: @9".
type CommandError struct {
	Lines []string
}

func (e *CommandError) Error() string {
	if len(e.Lines) == 0 {
		return "tmux: command failed"
	}
	// The lines are the other side's, as long as MaxReply: the message takes their start.
	var b strings.Builder
	for i, l := range e.Lines {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(l[:min(len(l), MaxErrorText+1)])
		if b.Len() > MaxErrorText {
			break
		}
	}
	return "tmux: " + termsafe.QuoteMax(b.String(), MaxErrorText)
}

// MaxErrorText is the most of tmux's own text (a failed command's lines, the reason of %exit, a
// field that does not parse) that an error message of this package quotes. The text comes from
// the other side of the stream, possibly another host, and may be as long as [MaxLine]: an error
// goes to logs and to people, who need its start only.
const MaxErrorText = 500

// ExitError says that tmux ended the control client with %exit: the session was killed, the
// server exited, the client was detached, or the input ended. Reason is what tmux gave after
// %exit, often nothing (kill-server and detach give none); "server exited unexpectedly" means the
// client could not reach or lost its server.
type ExitError struct {
	Reason string
}

func (e *ExitError) Error() string {
	if e.Reason == "" {
		return "tmux exited"
	}
	return "tmux exited: " + termsafe.QuoteMax(e.Reason, MaxErrorText)
}
