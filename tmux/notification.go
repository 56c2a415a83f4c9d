package tmux

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/krad-ade/krad/internal/termsafe"
)

// PaneID is a pane's unique ID, written %N by tmux. A negative PaneID means none and prints "-".
type PaneID int

// WindowID is a window's unique ID, written @N by tmux. A negative WindowID means none.
type WindowID int

// SessionID is a session's unique ID, written $N by tmux. A negative SessionID means none.
type SessionID int

func (id PaneID) String() string    { return idString('%', int(id)) }
func (id WindowID) String() string  { return idString('@', int(id)) }
func (id SessionID) String() string { return idString('$', int(id)) }

func idString(sigil byte, n int) string {
	if n < 0 {
		return "-"
	}
	return string(sigil) + strconv.Itoa(n)
}

// ParsePaneID parses "%N", as in the output of `display -p '#{pane_id}'`.
func ParsePaneID(s string) (PaneID, error) {
	n, err := parseID('%', s)
	return PaneID(n), err
}

// ParseWindowID parses "@N", as in the output of `new-window -P -F '#{window_id}'`.
func ParseWindowID(s string) (WindowID, error) {
	n, err := parseID('@', s)
	return WindowID(n), err
}

// ParseSessionID parses "$N".
func ParseSessionID(s string) (SessionID, error) {
	n, err := parseID('$', s)
	return SessionID(n), err
}

// parseID parses sigil followed by a decimal number that fits tmux's u_int.
func parseID(sigil byte, s string) (int, error) {
	if len(s) < 2 || s[0] != sigil || s[1] == '+' || s[1] == '-' {
		return -1, fmt.Errorf("%w: %s is not a %cN ID", ErrMalformed, quoteField(s), sigil)
	}
	n, err := strconv.ParseUint(s[1:], 10, 32)
	if err != nil {
		return -1, fmt.Errorf("%w: %s is not a %cN ID", ErrMalformed, quoteField(s), sigil)
	}
	return int(n), nil
}

// Notification is one of the types below: a line tmux sent outside any reply, or a reply to a
// command it ran itself ([UnsolicitedReply]). Use a type switch; lines this package does not know
// arrive as [Unknown], so a newer tmux's notifications are never an error.
type Notification interface{ notification() }

// Output is %output: bytes a pane wrote, unescaped. %extended-output (sent when the client set
// pause-after with refresh-client -f) arrives as Output too, with Age, the time tmux held the
// bytes back; Age is zero for %output.
type Output struct {
	Pane PaneID
	Data []byte
	Age  time.Duration
}

// Pause is %pause: tmux stopped sending a pane's output (pause-after).
type Pause struct{ Pane PaneID }

// Continue is %continue: tmux sends a pane's output again.
type Continue struct{ Pane PaneID }

// PaneModeChanged is %pane-mode-changed: a pane entered or left a mode such as copy mode.
type PaneModeChanged struct{ Pane PaneID }

// WindowAdd is %window-add: a window was linked to the attached session, or, with Unlinked,
// %unlinked-window-add: a window was created in another session.
type WindowAdd struct {
	Window   WindowID
	Unlinked bool
}

// WindowClose is %window-close, or %unlinked-window-close with Unlinked.
type WindowClose struct {
	Window   WindowID
	Unlinked bool
}

// WindowRenamed is %window-renamed, or %unlinked-window-renamed with Unlinked. Name is the rest of
// the line, spaces and all.
type WindowRenamed struct {
	Window   WindowID
	Name     string
	Unlinked bool
}

// WindowPaneChanged is %window-pane-changed: a window's active pane changed.
type WindowPaneChanged struct {
	Window WindowID
	Pane   PaneID
}

// LayoutChange is %layout-change. Layout and VisibleLayout are tmux layout strings; Flags is the
// window's flags, such as "*" or "-Z", and may be empty.
type LayoutChange struct {
	Window        WindowID
	Layout        string
	VisibleLayout string
	Flags         string
}

// SessionChanged is %session-changed: this client is now attached to the session.
type SessionChanged struct {
	Session SessionID
	Name    string
}

// SessionRenamed is %session-renamed. tmux 3.3 gives the session's ID; older versions gave the
// name only, and then Session is -1.
type SessionRenamed struct {
	Session SessionID
	Name    string
}

// SessionsChanged is %sessions-changed: a session was created or destroyed.
type SessionsChanged struct{}

// SessionWindowChanged is %session-window-changed: a session's current window changed.
type SessionWindowChanged struct {
	Session SessionID
	Window  WindowID
}

// ClientSessionChanged is %client-session-changed: another client attached to a session.
type ClientSessionChanged struct {
	Client  string
	Session SessionID
	Name    string
}

// ClientDetached is %client-detached: a client detached.
type ClientDetached struct{ Client string }

// SubscriptionChanged is %subscription-changed: the value of a format subscribed to with
// `refresh-client -B NAME:WHAT:FORMAT` changed (tmux checks at most once a second, and reports each
// pane's or window's first value too). Window, WindowIndex and Pane are -1 where tmux wrote "-":
// all three for a session subscription, Pane for a window one. Value is the rest of the line after
// " : ", spaces and all.
//
// Subscription names must not hold spaces: the line gives no way to tell where such a name ends.
type SubscriptionChanged struct {
	Name        string
	Session     SessionID
	Window      WindowID
	WindowIndex int
	Pane        PaneID
	Value       string
}

// PasteBufferChanged is %paste-buffer-changed (tmux 3.4 and later).
type PasteBufferChanged struct{ Name string }

// PasteBufferDeleted is %paste-buffer-deleted (tmux 3.4 and later).
type PasteBufferDeleted struct{ Name string }

// ConfigError is %config-error: an error in a configuration file (tmux 3.4 and later).
type ConfigError struct{ Message string }

// Exit is %exit, the last line tmux sends. After it the client ends and [Client.Err] returns an
// [*ExitError] with the same Reason.
type Exit struct{ Reason string }

// UnsolicitedReply is a reply to a command that tmux ran itself rather than one this client sent:
// the new-session or attach-session of `tmux -C new-session -A` at start, and hooks' commands.
// Failed means the block ended in %error (Lines then say why, as "width invalid" does for a bad -x).
type UnsolicitedReply struct {
	Lines  []string
	Failed bool
}

// Unknown is a line this package cannot read as a notification. Err is nil for a notification
// kind it does not know (a newer tmux's); otherwise it wraps [ErrMalformed] and says what is
// wrong: a known kind with bad fields, or a line that does not start with '%'.
type Unknown struct {
	Line string
	Err  error
}

func (Output) notification()               {}
func (Pause) notification()                {}
func (Continue) notification()             {}
func (PaneModeChanged) notification()      {}
func (WindowAdd) notification()            {}
func (WindowClose) notification()          {}
func (WindowRenamed) notification()        {}
func (WindowPaneChanged) notification()    {}
func (LayoutChange) notification()         {}
func (SessionChanged) notification()       {}
func (SessionRenamed) notification()       {}
func (SessionsChanged) notification()      {}
func (SessionWindowChanged) notification() {}
func (ClientSessionChanged) notification() {}
func (ClientDetached) notification()       {}
func (SubscriptionChanged) notification()  {}
func (PasteBufferChanged) notification()   {}
func (PasteBufferDeleted) notification()   {}
func (ConfigError) notification()          {}
func (Exit) notification()                 {}
func (UnsolicitedReply) notification()     {}
func (Unknown) notification()              {}

// parseNotification reads one line that is outside any reply (without its newline). It never
// fails: what it cannot read comes back as Unknown.
func parseNotification(line []byte) Notification {
	if len(line) == 0 || line[0] != '%' {
		return Unknown{Line: string(line), Err: fmt.Errorf("%w: a line outside a reply that is not a notification", ErrMalformed)}
	}
	kind, rest, _ := bytes.Cut(line[1:], []byte{' '})
	n, err := parseKind(string(kind), rest)
	if err != nil {
		return Unknown{Line: string(line), Err: fmt.Errorf("%w: %%%s: %w", ErrMalformed, termsafe.QuoteMax(string(kind), maxKind), err)}
	}
	if n == nil {
		return Unknown{Line: string(line)}
	}
	return n
}

// parseKind parses the fields of one kind of notification. It returns nil, nil for a kind it does
// not know.
func parseKind(kind string, rest []byte) (Notification, error) {
	f := fields{rest: string(rest)}
	switch kind {
	case "output":
		pane := f.pane()
		data, err := unescape(f.tail())
		if err := f.done(err); err != nil {
			return nil, err
		}
		return Output{Pane: pane, Data: data}, nil
	case "extended-output":
		pane := f.pane()
		age := f.uint(maxAge)
		f.colon()
		data, err := unescape(f.tail())
		if err := f.done(err); err != nil {
			return nil, err
		}
		return Output{Pane: pane, Data: data, Age: time.Duration(age) * time.Millisecond}, nil
	case "pause":
		n := Pause{Pane: f.pane()}
		return n, f.end()
	case "continue":
		n := Continue{Pane: f.pane()}
		return n, f.end()
	case "pane-mode-changed":
		n := PaneModeChanged{Pane: f.pane()}
		return n, f.end()
	case "window-add", "unlinked-window-add":
		n := WindowAdd{Window: f.window(), Unlinked: kind[0] == 'u'}
		return n, f.end()
	case "window-close", "unlinked-window-close":
		n := WindowClose{Window: f.window(), Unlinked: kind[0] == 'u'}
		return n, f.end()
	case "window-renamed", "unlinked-window-renamed":
		n := WindowRenamed{Window: f.window(), Unlinked: kind[0] == 'u'}
		n.Name = f.tail()
		return n, f.done(nil)
	case "window-pane-changed":
		n := WindowPaneChanged{Window: f.window(), Pane: f.pane()}
		return n, f.end()
	case "layout-change":
		n := LayoutChange{Window: f.window(), Layout: f.word(), VisibleLayout: f.optWord(), Flags: f.optWord()}
		return n, f.end()
	case "session-changed":
		n := SessionChanged{Session: f.session()}
		n.Name = f.tail()
		return n, f.done(nil)
	case "session-renamed":
		if id, err := ParseSessionID(f.peek()); err == nil {
			f.word()
			return SessionRenamed{Session: id, Name: f.tail()}, nil
		}
		return SessionRenamed{Session: -1, Name: f.tail()}, nil
	case "sessions-changed":
		return SessionsChanged{}, f.end()
	case "session-window-changed":
		n := SessionWindowChanged{Session: f.session(), Window: f.window()}
		return n, f.end()
	case "client-session-changed":
		n := ClientSessionChanged{Client: f.word(), Session: f.session()}
		n.Name = f.tail()
		return n, f.done(nil)
	case "client-detached":
		return ClientDetached{Client: f.tail()}, nil
	case "subscription-changed":
		n := SubscriptionChanged{Name: f.word(), Session: f.session()}
		if f.peek() == "-" {
			f.word()
			n.Window = -1
		} else {
			n.Window = f.window()
		}
		if f.peek() == "-" {
			f.word()
			n.WindowIndex = -1
		} else {
			n.WindowIndex = int(f.uint(maxIndex))
		}
		if f.peek() == "-" {
			f.word()
			n.Pane = -1
		} else {
			n.Pane = f.pane()
		}
		f.colon()
		n.Value = f.tail()
		return n, f.done(nil)
	case "paste-buffer-changed":
		return PasteBufferChanged{Name: f.tail()}, nil
	case "paste-buffer-deleted":
		return PasteBufferDeleted{Name: f.tail()}, nil
	case "config-error":
		return ConfigError{Message: f.tail()}, nil
	case "exit":
		return Exit{Reason: f.tail()}, nil
	}
	return nil, nil
}

// fields takes space-separated fields off the front of a notification's arguments. The first
// problem is kept in err; later calls then do nothing, so a parser reads its fields in a row and
// checks once.
type fields struct {
	rest string
	err  error
}

func (f *fields) fail(format string, args ...any) {
	if f.err == nil {
		f.err = fmt.Errorf(format, args...)
	}
}

// peek returns the next field without taking it.
func (f *fields) peek() string {
	w, _, _ := strings.Cut(f.rest, " ")
	return w
}

// word takes the next field, which must be there.
func (f *fields) word() string {
	if f.err != nil {
		return ""
	}
	if f.rest == "" {
		f.fail("too few fields")
		return ""
	}
	w, rest, _ := strings.Cut(f.rest, " ")
	f.rest = rest
	return w
}

// optWord takes the next field if there is one.
func (f *fields) optWord() string {
	if f.rest == "" {
		return ""
	}
	return f.word()
}

func (f *fields) pane() PaneID {
	id, err := ParsePaneID(f.word())
	if err != nil {
		f.fail("pane: %w", err)
	}
	return id
}

func (f *fields) window() WindowID {
	id, err := ParseWindowID(f.word())
	if err != nil {
		f.fail("window: %w", err)
	}
	return id
}

func (f *fields) session() SessionID {
	id, err := ParseSessionID(f.word())
	if err != nil {
		f.fail("session: %w", err)
	}
	return id
}

// The largest numbers the notifications' number fields hold: a window index is a C int in tmux,
// and the age of %extended-output, in milliseconds, is a u_int. A larger number is refused rather
// than wrapped into a negative one.
const (
	maxIndex = math.MaxInt32
	maxAge   = math.MaxUint32
)

// maxKind is how much of an unknown notification's kind an error quotes.
const maxKind = 40

// uint takes the next field, a decimal number of at most max.
func (f *fields) uint(max uint64) uint64 {
	w := f.word()
	n, err := strconv.ParseUint(w, 10, 64)
	if err == nil && n > max {
		err = strconv.ErrRange
	}
	if err != nil && f.err == nil {
		f.fail("%s is not a number from 0 to %d", quoteField(w), max)
	}
	if err != nil {
		return 0
	}
	return n
}

// quoteField quotes a field for an error message, Go-quoted and cut to MaxErrorText bytes.
func quoteField(s string) string {
	c := termsafe.Cut(s, MaxErrorText)
	if len(c) == len(s) {
		return strconv.Quote(s)
	}
	return strconv.Quote(c) + "…"
}

// colon skips the fields tmux reserves for future use, up to and including a lone ":".
func (f *fields) colon() {
	for f.err == nil {
		if f.rest == "" {
			f.fail("no ' : ' before the value")
			return
		}
		if f.word() == ":" {
			return
		}
	}
}

// tail takes the rest of the line, spaces and all.
func (f *fields) tail() string {
	t := f.rest
	f.rest = ""
	return t
}

// end checks that every field was read and none is left over.
func (f *fields) end() error {
	if f.err == nil && f.rest != "" {
		f.fail("unexpected fields after the last")
	}
	return f.err
}

// done returns the first problem of the fields, or err.
func (f *fields) done(err error) error {
	if f.err != nil {
		return f.err
	}
	return err
}

// unescape undoes tmux's escaping of pane output, where every byte below 0x20 and the backslash
// are written as a backslash and three octal digits; all other bytes, invalid UTF-8 included, come
// as they are. It refuses a backslash that is not followed by three octal digits of at most 0377.
func unescape(s string) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		if i+3 >= len(s) {
			return nil, fmt.Errorf("a backslash at byte %d without three octal digits", i)
		}
		d0, d1, d2 := s[i+1]-'0', s[i+2]-'0', s[i+3]-'0'
		if d0 > 3 || d1 > 7 || d2 > 7 {
			return nil, fmt.Errorf("a backslash at byte %d without three octal digits", i)
		}
		out = append(out, d0<<6|d1<<3|d2)
		i += 3
	}
	return out, nil
}
