package api

import "fmt"

// ErrorCode is the machine-readable kind of an [Error].
type ErrorCode string

// The error codes of the Agents API v1.
const (
	// CodeBadRequest: the line is not a valid envelope, the request is unknown or its fields are
	// wrong, the line is over 64 KiB, or it did not arrive within 10 seconds.
	CodeBadRequest ErrorCode = "bad_request"
	// CodeUnauthorized: the token is wrong, or a Lead caller did not carry the lead token.
	CodeUnauthorized ErrorCode = "unauthorized"
	// CodeUnsupportedAPIVersion: the envelope's api_version is not the one the app serves.
	CodeUnsupportedAPIVersion ErrorCode = "unsupported_api_version"
	// CodeForbidden: this caller may not make this request.
	CodeForbidden ErrorCode = "forbidden"
	// CodeNotFound: the target does not exist.
	CodeNotFound ErrorCode = "not_found"
	// CodeConflict: the target is in a state that does not allow the request.
	CodeConflict ErrorCode = "conflict"
	// CodeUnavailable: the app cannot serve the request now: an environment is down, the bus
	// dropped the connection under a flood ([Dropped]), or this build does not serve it
	// ([NotServed]).
	CodeUnavailable ErrorCode = "unavailable"
	// CodeInternal: the app failed; the request may be retried.
	CodeInternal ErrorCode = "internal"
)

// ErrorReason is krad's own finer kind of an [Error], beside its code, for a client that acts on
// it (the krad CLI picks its hint by it) rather than on the message, whose words may change. It
// is krad's addition to the wire: the Error object's optional "reason", left out when empty, as
// it is for most errors. The spec's Error has code and message only; a client that does not
// know the field ignores it.
type ErrorReason string

// The reasons.
const (
	// ReasonNoTerminal (not_found): the target is no terminal of its environment ([NoTerminal]).
	ReasonNoTerminal ErrorReason = "no_terminal"
	// ReasonNoExtension (not_found): config.toml lends the environment no extension of that name.
	ReasonNoExtension ErrorReason = "no_extension"
	// ReasonNoAgent (bad_request): config.toml has no [[agent]] of that name.
	ReasonNoAgent ErrorReason = "no_agent"
	// ReasonTooManyTerminals (conflict): the environment has the most terminals the app follows.
	ReasonTooManyTerminals ErrorReason = "too_many_terminals"
	// ReasonEnvironmentDown (unavailable): the environment is down, still coming up, or its SSH
	// host is not connected; waiting fixes it.
	ReasonEnvironmentDown ErrorReason = "environment_down"
	// ReasonNotServed (unavailable): this build does not serve the request ([NotServed]).
	ReasonNotServed ErrorReason = "not_served"
	// ReasonDropped (unavailable): the bus dropped the connection under a flood ([Dropped]).
	ReasonDropped ErrorReason = "dropped"
	// ReasonNoIdentity (conflict): a pick that commits (squash, merge) in a repository where git
	// has no identity to commit with (user.name, user.email).
	ReasonNoIdentity ErrorReason = "no_identity"
	// ReasonInTheWay (conflict): a pick would write over files of the main checkout that are not
	// its own to replace (ignored or untracked files, a folder or a symbolic link in its way,
	// changes not committed).
	ReasonInTheWay ErrorReason = "in_the_way"
)

// Error is an error answer: {"Error":{"code":"not_found","message":"…"}}, and with a reason
// {"Error":{"code":"not_found","message":"…","reason":"no_terminal"}}.
type Error struct {
	Code    ErrorCode   `json:"code"`
	Message string      `json:"message"`
	Reason  ErrorReason `json:"reason,omitempty"`

	cause error // what went wrong underneath, if anything; never on the wire
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the error underneath, such as a read deadline, so that callers can branch on it.
func (e *Error) Unwrap() error { return e.cause }

// WithCause sets cause as the error underneath e, for the app's own code to branch on with
// errors.Is, and returns e. The cause never reaches the wire.
func (e *Error) WithCause(cause error) *Error {
	e.cause = cause
	return e
}

// WithReason sets e's reason and returns e.
func (e *Error) WithReason(r ErrorReason) *Error {
	e.Reason = r
	return e
}

// Errorf makes an *Error with a formatted message. Never format a client's input into it verbatim.
func Errorf(code ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// NoTerminal is the error about a target that is no terminal of its environment.
func NoTerminal(env string, n int) *Error {
	return Errorf(CodeNotFound, "no terminal %s:%d: see krad list", env, n).WithReason(ReasonNoTerminal)
}

// UnsupportedVersion is the answer to an envelope of another API version.
func UnsupportedVersion(got int) *Error {
	return Errorf(CodeUnsupportedAPIVersion, "This app serves the agents API v%d, not v%d", Version, got)
}

// NotServed is the error of a request, or a field of one, that this build of the app does not
// serve yet. Its code is unavailable, as the spec has no other; its reason ([IsNotServed]) tells
// it apart from an environment that is down, which waiting fixes and this does not. what names
// it ("Changes", "groups (Spawn's group)"); instead, if not empty, says what to do meanwhile.
func NotServed(what, instead string) *Error {
	msg := "this build of krad-ade does not serve " + what + " yet"
	if instead != "" {
		msg += ": " + instead
	}
	return &Error{Code: CodeUnavailable, Message: msg, Reason: ReasonNotServed}
}

// IsNotServed reports whether e is a [NotServed] error.
func IsNotServed(e *Error) bool {
	return e != nil && e.Code == CodeUnavailable && e.Reason == ReasonNotServed
}

// Dropped is the answer of a connection the bus dropped before it read the request line, to stay
// within its bounds on connections that have not sent a whole line yet (a flood of them). Its
// code is unavailable, as the spec has no other; its reason ([IsDropped]) tells it apart from an
// environment that is down: no environment is involved, and trying again is what to do. why
// says which bound, and what the client can do.
func Dropped(why string) *Error {
	return &Error{Code: CodeUnavailable, Message: "the bus dropped this connection before it read its line: " + why, Reason: ReasonDropped}
}

// IsDropped reports whether e is a [Dropped] error.
func IsDropped(e *Error) bool {
	return e != nil && e.Code == CodeUnavailable && e.Reason == ReasonDropped
}
