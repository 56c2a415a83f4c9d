package tmux

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fuzzCommands is how many commands FuzzParse sends before the stream is read.
const fuzzCommands = 3

// maxErrorMessage bounds the messages of the client's errors, whatever the stream holds: quoted
// text from the stream (MaxErrorText, escaped at most 4 bytes a byte) and the words around it.
const maxErrorMessage = 4*MaxErrorText + 200

// fuzzStream gives the fuzzer's bytes to the client once it has written fuzzCommands lines, so
// that every command waits for a reply before the first byte is read.
type fuzzStream struct {
	data *bytes.Reader

	mu      sync.Mutex
	written int           // lines written so far
	wrote   chan struct{} // signalled on every line
	ready   chan struct{} // closed once fuzzCommands lines are written
	closed  chan struct{}
	once    sync.Once
}

func (s *fuzzStream) Read(b []byte) (int, error) {
	select {
	case <-s.ready:
	case <-s.closed:
		return 0, io.ErrClosedPipe
	}
	return s.data.Read(b)
}

func (s *fuzzStream) Write(b []byte) (int, error) {
	s.mu.Lock()
	s.written += bytes.Count(b, []byte{'\n'})
	if s.written >= fuzzCommands {
		s.once.Do(func() { close(s.ready) })
	}
	s.mu.Unlock()
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return len(b), nil
}

func (s *fuzzStream) Close() error { return nil }

func (s *fuzzStream) lines() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}

// expectation is what a plain reading of the stream says the client must do: the replies to its
// commands in order, whether it ends on %exit, and whether tmux answered more commands than it sent.
type expectation struct {
	replies  []reply
	exit     bool
	tooMany  bool
	complete bool // the stream is whole lines only and does not stop inside a reply
}

// expect reads the stream as the protocol says, the simplest way: split into lines, a reply runs
// from %begin to the %end or %error that repeats its three fields, flags 1 is ours.
func expect(stream []byte) expectation {
	var e expectation
	lines := strings.Split(string(stream), "\n")
	e.complete = lines[len(lines)-1] == ""
	lines = lines[:len(lines)-1] // the last piece has no newline: it is never a whole line
	open, guard, ours, failed := false, "", false, false
	var out []string
	for _, line := range lines {
		if !open {
			if g, ok := strings.CutPrefix(line, "%begin "); ok && isGuard(g) {
				f := strings.Split(g, " ")
				flags, _ := strconv.ParseUint(f[2], 10, 64)
				open, guard, ours, out = true, g, flags&1 == 1, nil
				continue
			}
			if line == "%exit" || strings.HasPrefix(line, "%exit ") {
				e.exit = true
				return e
			}
			continue
		}
		switch line {
		case "%end " + guard:
			failed = false
		case "%error " + guard:
			failed = true
		default:
			out = append(out, line)
			continue
		}
		open = false
		if !ours {
			continue
		}
		if len(e.replies) == fuzzCommands {
			e.tooMany = true
			return e
		}
		if failed {
			e.replies = append(e.replies, reply{err: &CommandError{Lines: out}})
		} else {
			if out == nil {
				out = []string{}
			}
			e.replies = append(e.replies, reply{lines: out})
		}
	}
	if open {
		e.complete = false
	}
	return e
}

func isGuard(s string) bool {
	f := strings.Split(s, " ")
	if len(f) != 3 {
		return false
	}
	for _, n := range f {
		if n == "" || len(n) > 20 {
			return false
		}
		if _, err := strconv.ParseUint(n, 10, 64); err != nil {
			return false
		}
	}
	return true
}

// FuzzParse: whatever tmux's side of the stream holds, the client never panics or hangs, each
// command gets exactly the reply a plain reading of the stream gives it (or fails with ErrClosed
// once there is none), notifications are the package's types with problems wrapped in
// ErrMalformed, and the client ends for the reason the stream gives.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"%begin 1 1 0\n%end 1 1 0\n%window-add @0\n%sessions-changed\n%session-changed $0 main\n",
		"%begin 1 2 1\nmain\n%end 1 2 1\n%begin 1 3 1\nparse error: unknown command: x\n%error 1 3 1\n%begin 1 4 1\n%end 1 4 1\n%exit\n",
		"%output %0 \\033[?2004h$ a\\011b\\134n\n%extended-output %1 20 : x\n%exit server exited unexpectedly\n",
		"%begin 1 2 1\n%output %0 x\n%end 9 9 9\n%begin 1 2 1\n%end 1 2 1\n",
		"%subscription-changed dead $0 @1 1 %1 : 1 3\n%layout-change @0 b25f,80x24,0,0,2 b25f,80x24,0,0,2 *\n",
		"%window-renamed @1 a b\n%unlinked-window-close @1\n%pause %1\n%continue %1\n%client-detached c\n",
		"%begin 1 1 1\n%end 1 1 1\n%begin 1 1 1\n%end 1 1 1\n%begin 1 1 1\n%end 1 1 1\n%begin 1 1 1\n%end 1 1 1\n",
		"%begin 1 1 1\npartial",
		"garbage\n\xff\xfe\n%\n%begin\n%begin 1 2\n%end 1 2 3\n%output %1 \\9\n",
		"%begin 18446744073709551615 4294967295 1\n%end 18446744073709551615 4294967295 1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		want := expect(stream)
		fs := &fuzzStream{data: bytes.NewReader(stream), wrote: make(chan struct{}, 1), ready: make(chan struct{}), closed: make(chan struct{})}
		var notes []Notification
		c := New(fs, func(_ *Client, n Notification) { notes = append(notes, n) })
		defer c.Close()

		// Send the commands one at a time, so that their order on the stream is known.
		results := make([]chan reply, fuzzCommands)
		for i := range results {
			results[i] = make(chan reply, 1)
			go func() {
				lines, err := c.Command(context.Background(), "display", "-p", strconv.Itoa(i))
				results[i] <- reply{lines, err}
			}()
			for fs.lines() <= i {
				select {
				case <-fs.wrote:
				case <-time.After(10 * time.Second):
					t.Fatalf("command %d was not written", i)
				}
			}
		}

		for i, ch := range results {
			var got reply
			select {
			case got = <-ch:
			case <-time.After(10 * time.Second):
				t.Fatalf("command %d did not return", i)
			}
			if got.err != nil && len(got.err.Error()) > maxErrorMessage {
				t.Fatalf("command %d: an error of %d bytes", i, len(got.err.Error()))
			}
			if i < len(want.replies) {
				if !reflect.DeepEqual(got, want.replies[i]) {
					t.Fatalf("command %d: got %#v, want %#v", i, got, want.replies[i])
				}
			} else if !errors.Is(got.err, ErrClosed) {
				t.Fatalf("command %d: got %#v, want an error wrapping ErrClosed", i, got)
			}
		}
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the client did not end")
		}

		err := c.Err()
		if len(err.Error()) > maxErrorMessage {
			t.Fatalf("Err() is %d bytes long", len(err.Error()))
		}
		var exit *ExitError
		switch {
		case want.tooMany:
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("Err() = %v, want ErrProtocol: tmux answered more commands than were sent", err)
			}
		case want.exit:
			if !errors.As(err, &exit) {
				t.Fatalf("Err() = %v, want an *ExitError", err)
			}
		default:
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("Err() = %v, want io.ErrUnexpectedEOF", err)
			}
		}
		for _, n := range notes {
			switch n := n.(type) {
			case nil:
				t.Fatal("a nil notification")
			case Unknown:
				if n.Err != nil && !errors.Is(n.Err, ErrMalformed) {
					t.Fatalf("Unknown %q with an error %v that does not wrap ErrMalformed", n.Line, n.Err)
				}
				if n.Err != nil && len(n.Err.Error()) > maxErrorMessage {
					t.Fatalf("an error of %d bytes about a notification", len(n.Err.Error()))
				}
			case Output:
				if len(n.Data) > len(stream) {
					t.Fatalf("output of %d bytes from a stream of %d", len(n.Data), len(stream))
				}
				if n.Age < 0 {
					t.Fatalf("output with a negative age %v", n.Age)
				}
			case SubscriptionChanged:
				if n.WindowIndex < -1 || n.Window < -1 || n.Pane < -1 || n.Session < 0 {
					t.Fatalf("a subscription's ids out of range: %#v", n)
				}
			}
		}
		if exit != nil && (len(notes) == 0 || !reflect.DeepEqual(notes[len(notes)-1], Exit{Reason: exit.Reason})) {
			t.Fatalf("the client ended on %%exit but the last notification is not Exit: %#v", notes)
		}
	})
}

// FuzzQuote: whatever the argument, Quote gives one double-quoted token of printable ASCII that
// tmux's escape rules turn back into the argument, and in which nothing tmux expands or splits on
// is left unescaped. (TestTmuxQuoteRoundTrip checks the same against the real tmux.)
func FuzzQuote(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		q := Quote(arg)
		if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
			t.Fatalf("Quote(%q) = %s, not in double quotes", arg, q)
		}
		var out []byte
		body := q[1 : len(q)-1]
		for i := 0; i < len(body); i++ {
			c := body[i]
			if c < 0x20 || c >= 0x7f {
				t.Fatalf("Quote(%q) = %q holds the raw byte %#x", arg, q, c)
			}
			switch c {
			case '"', '$', '~':
				t.Fatalf("Quote(%q) = %s holds an unescaped %c", arg, q, c)
			case '\\':
			default:
				out = append(out, c)
				continue
			}
			if i+1 == len(body) {
				t.Fatalf("Quote(%q) = %s ends in a lone backslash", arg, q)
			}
			i++
			switch e := body[i]; {
			case e == 'n':
				out = append(out, '\n')
			case e == 'r':
				out = append(out, '\r')
			case e == 't':
				out = append(out, '\t')
			case e == 'e':
				out = append(out, 0x1b)
			case e >= '0' && e <= '3':
				if i+2 >= len(body) || body[i+1] < '0' || body[i+1] > '7' || body[i+2] < '0' || body[i+2] > '7' {
					t.Fatalf("Quote(%q) = %s has a short octal escape", arg, q)
				}
				out = append(out, (e-'0')<<6|(body[i+1]-'0')<<3|(body[i+2]-'0'))
				i += 2
			case strings.IndexByte(`"\$~`, e) >= 0:
				out = append(out, e)
			default:
				// tmux reads \u, \U, \a, \b, \f, \s, \v and \4-\7 as more than the character.
				t.Fatalf("Quote(%q) = %s escapes %q, which tmux reads specially or not at all", arg, q, e)
			}
		}
		if string(out) != arg {
			t.Fatalf("Quote(%q) = %s, which tmux reads as %q", arg, q, out)
		}
	})
}

// FuzzFormatLiteral: whatever the text, tmux's own format expansion (set-option -F, the same as
// new-window -n's) turns FormatLiteral's result back into the text. It runs the real tmux.
func FuzzFormatLiteral(f *testing.F) {
	for _, s := range append(append([]string{}, hostile...), formatHostile...) {
		f.Add(s)
	}
	s := startServer(f)
	f.Fuzz(func(t *testing.T, text string) {
		if strings.IndexByte(text, 0) >= 0 {
			t.Skip("tmux cannot carry NUL")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := s.c.Command(ctx, "set-option", "-F", "-g", "@krad-fuzz", FormatLiteral(text)); err != nil {
			t.Fatalf("set-option -F: %v", err)
		}
		out, err := s.c.Command(ctx, "show-options", "-gv", "@krad-fuzz")
		if err != nil {
			t.Fatalf("show-options: %v", err)
		}
		if got := strings.Join(out, "\n"); got != text {
			t.Fatalf("FormatLiteral(%q) = %q, which tmux expands to %q", text, FormatLiteral(text), got)
		}
	})
}
