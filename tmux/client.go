package tmux

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The limits on what a Client reads. Past either, the client ends with an error wrapping
// [ErrTooLong].
const (
	// MaxLine is the longest line read, newline not counted. A pane that writes a lot at once
	// gives long %output lines (each byte below 0x20 takes four), but tmux sends a pane's output
	// in pieces far smaller than this.
	MaxLine = 4 << 20
	// MaxReply is the most memory a reply may take: its lines' bytes, and 16 more for each
	// line. It leaves room for capture-pane of a large history.
	MaxReply = 64 << 20
)

// Client is a control-mode client of one tmux server, attached to one session. Its methods are
// safe to call from many goroutines at once.
type Client struct {
	rw     io.ReadWriteCloser
	onNote func(*Client, Notification)

	mu     sync.Mutex
	unsent []*call // waiting for the writer, in the order Command was called
	sent   []*call // written, waiting for their replies, in the order written
	err    error   // why the client ended; nil while it runs
	// replied is when the last reply came (or the client started): with sent, how long tmux
	// has made a command wait, for Watch.
	replied time.Time

	// For Watch, set by the reader without mu (it reads a line at a time, and the pane output of
	// a busy host is many lines): when it last read a line of any kind, and when it last read a
	// line of a reply to one of the client's commands, as nanoseconds since started (which has
	// a monotonic clock reading, as time.Now's times do).
	started         time.Time
	heard, replying atomic.Int64

	wake  chan struct{} // tells the writer there is something in unsent
	ended chan struct{} // closed when err is set
	done  chan struct{} // closed when the reader has returned and rw is closed

	closeOnce sync.Once
	closeErr  error
}

// call is one command on its way: its line, and where its reply goes. reply has room for one
// value and receives exactly one: from the reader when the reply comes, or from end.
type call struct {
	line  []byte
	reply chan reply
	sent  time.Time // when the writer took it; set under Client.mu
}

type reply struct {
	lines []string
	err   error
}

// New starts a client over rw, which must already carry tmux's control mode (the output of
// `tmux -C …` to read, its input to write). It starts reading at once, and returns without
// waiting for tmux: [Attach] waits for tmux's first reply. onNote, which may be nil, is called
// for every notification, with this client (the one New returns, even for a notification that
// comes before New has returned), in the order tmux sent them, from the goroutine that reads rw:
// it must return quickly and must not wait for a [Client.Command], whose reply that goroutine
// would have to read.
//
// rw.Close must make a Read blocked on rw return, as it does for pipes, network connections and
// SSH sessions: that is how [Client.Close] stops the reading goroutine.
func New(rw io.ReadWriteCloser, onNote func(*Client, Notification)) *Client {
	c := &Client{
		rw:     rw,
		onNote: onNote,
		wake:   make(chan struct{}, 1),
		ended:  make(chan struct{}),
		done:   make(chan struct{}),
	}
	c.started = time.Now()
	c.replied = c.started
	go c.read()
	go c.write()
	return c
}

// Command sends one command line made of args, each quoted with [Quote] (args[0] is the command's
// name, such as "display-message" or its alias "display"), and returns its reply's output lines.
// A command tmux rejects returns a [*CommandError] holding tmux's lines, and so does one that does
// not parse ("parse error: …").
//
// Quoting keeps tmux's parser from reading anything into an argument, but tmux still reads
// leading arguments that start with '-' as flags: put "--" before text that may start with one
// (send-keys -l -- TEXT, new-window … -- COMMAND).
//
// tmux answers commands in the order they are sent, and Command may be called from many goroutines
// at once. Each line is one command (Quote keeps a ";" from starting another), so each gets one
// reply. When ctx ends first, Command returns ctx's error; a command not yet written is then never
// sent, and the reply of one already sent is read and dropped, never handed to another caller.
// tmux runs the commands of one client one after another: wait-for answers at once but holds back
// every later command until its channel is signalled.
//
// A few commands would break the order, because tmux answers them with more than one reply or
// makes every later command wait for a person: if-shell, source-file, run-shell, confirm-before,
// command-prompt, display-menu, display-popup and display-panes. Command refuses them, their
// aliases and the prefixes tmux would take for them, with an error wrapping [ErrRefused]. Do not
// give them other names with the command-alias option either (hooks may run them: tmux marks
// their replies as not ours). Should one slip through, the replies fall out of step; the client
// notices when a reply comes with no command waiting, and ends with [ErrProtocol].
//
// Once the client has ended, Command returns an error wrapping [ErrClosed] and, when the stream
// ended rather than Close, the reason [Client.Err] gives. When ctx ends first, the error is ctx's
// own. Its errors do not name the command: the caller says which step it was ("tmux send-keys: …").
func (c *Client) Command(ctx context.Context, args ...string) ([]string, error) {
	line, err := commandLine(args)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cl := &call{line: line, reply: make(chan reply, 1)}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, closedError(err)
	}
	c.unsent = append(c.unsent, cl)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // the writer has been woken already and will take this call with the others
	}

	select {
	case r := <-cl.reply:
		return r.lines, r.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	if i := slices.Index(c.unsent, cl); i >= 0 {
		c.unsent = slices.Delete(c.unsent, i, i+1)
	}
	c.mu.Unlock()
	select {
	case r := <-cl.reply: // it came after all, while ctx ended
		return r.lines, r.err
	default:
		return nil, ctx.Err()
	}
}

// Close closes the stream. Commands waiting for replies fail with [ErrClosed], and [Client.Err]
// returns ErrClosed. Close returns rw.Close's error; calling it again returns the same.
func (c *Client) Close() error {
	c.end(ErrClosed)
	return c.closeRW()
}

// Done is closed when the client has ended and its stream is closed: after Close, after %exit,
// at the end of the stream, or on an error reading or writing it. By then every notification has
// been delivered.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err says why the client ended, or returns nil while it runs:
//
//   - [ErrClosed]: Close was called;
//   - an [*ExitError]: tmux sent %exit (the server was killed, the session destroyed, the client
//     detached);
//   - an error wrapping [io.ErrUnexpectedEOF]: the stream ended without %exit, as it does when an
//     SSH connection drops or tmux is killed;
//   - an error wrapping [ErrTooLong] or [ErrProtocol];
//   - an error wrapping [ErrNoAnswer]: [Client.Watch] saw tmux stop answering;
//   - an error reading or writing the stream, wrapped.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// closedError is the error of a command that meets an ended client.
func closedError(cause error) error {
	if cause == ErrClosed {
		return ErrClosed
	}
	return fmt.Errorf("%w: %w", ErrClosed, cause)
}

// end ends the client for cause, unless it has ended already, and fails every command still
// waiting.
func (c *Client) end(cause error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = cause
	pending := append(c.sent, c.unsent...)
	c.sent, c.unsent = nil, nil
	close(c.ended)
	c.mu.Unlock()

	err := closedError(cause)
	for _, cl := range pending {
		cl.reply <- reply{err: err}
	}
}

// Watch makes the client notice a tmux that stops answering: a server that was stopped
// (SIGSTOP), a host that hangs, or a stream that stays open but carries nothing (an SSH channel
// that stalls while the connection lives, a compromised host's program that answered once). The
// client ends with an error wrapping [ErrNoAnswer] and its stream is closed, as by Close (commands
// waiting fail, and [Client.Done] is closed), when a command waits for its reply and either
//
//   - nothing at all came from tmux for longer than timeout, or
//   - no line of its reply came for longer than 4 × timeout (hardFactor), though other lines
//     (a pane's output) kept coming.
//
// Every line counts as a sign of life, not only replies: tmux queues a command's reply behind
// the pane output it has not written yet, so a worker that prints faster than an SSH link
// carries, or a long capture-pane over a slow link, delays a reply while the stream is busy. The
// second bound ends a host that streams output but never answers. Both count from when the
// command became the oldest one waiting (tmux answers in order), so a burst of slow commands is
// not taken for a stuck server as long as replies come. While no command is waiting, Watch asks
// tmux something that costs it nothing (display-message -p) every timeout/4, so that silence is
// noticed too, within about 1.5 × timeout.
//
// A timeout of zero or less does nothing. Call Watch once; it stops when the client ends.
func (c *Client) Watch(timeout time.Duration) {
	if timeout <= 0 {
		return
	}
	go c.watch(timeout)
}

// hardFactor times Watch's timeout is how long a command may wait for its reply while
// tmux sends other lines.
const hardFactor = 4

func (c *Client) watch(timeout time.Duration) {
	tick := time.NewTicker(timeout / 4)
	defer tick.Stop()
	for {
		select {
		case <-c.ended:
			return
		case <-tick.C:
		}
		now := time.Now()
		c.mu.Lock()
		var waited, quiet time.Duration
		if len(c.sent) > 0 {
			// Since when the oldest command has waited with none of its reply read.
			since := c.sent[0].sent
			if c.replied.After(since) {
				since = c.replied
			}
			if r := c.started.Add(time.Duration(c.replying.Load())); r.After(since) {
				since = r
			}
			waited = now.Sub(since)
			if h := c.started.Add(time.Duration(c.heard.Load())); h.After(since) {
				since = h
			}
			quiet = now.Sub(since)
		}
		idle := len(c.sent) == 0 && len(c.unsent) == 0
		c.mu.Unlock()
		var cause error
		switch {
		case quiet > timeout:
			cause = fmt.Errorf("%w: a command waited more than %s for its reply, and nothing came meanwhile", ErrNoAnswer, timeout)
		case waited > hardFactor*timeout:
			cause = fmt.Errorf("%w: a command waited more than %s for its reply, while only other output came", ErrNoAnswer, hardFactor*timeout)
		case idle:
			// Its reply only has to come; the command fails once the client ends.
			go func() { _, _ = c.Command(context.Background(), "display-message", "-p", "") }()
			continue
		default:
			continue
		}
		c.end(cause)
		// A tmux that answers nothing will not detach cleanly either: a local one is killed
		// rather than waited for.
		if k, ok := c.rw.(interface{ kill() }); ok {
			k.kill()
		}
		c.closeRW()
		return
	}
}

func (c *Client) closeRW() error {
	c.closeOnce.Do(func() { c.closeErr = c.rw.Close() })
	return c.closeErr
}

// write writes the lines of waiting calls, in order, moving each call to sent before its line
// goes out so that the reader finds it when the reply comes.
func (c *Client) write() {
	var buf []byte
	for {
		select {
		case <-c.wake:
		case <-c.ended:
			return
		}
		c.mu.Lock()
		if c.err != nil {
			c.mu.Unlock()
			return
		}
		batch := c.unsent
		c.unsent = nil
		now := time.Now()
		for _, cl := range batch {
			cl.sent = now
		}
		c.sent = append(c.sent, batch...)
		c.mu.Unlock()
		if len(batch) == 0 {
			continue
		}

		if cap(buf) > 1<<20 {
			buf = nil // do not keep a large send-keys around
		}
		buf = buf[:0]
		for _, cl := range batch {
			buf = append(buf, cl.line...)
		}
		if _, err := c.rw.Write(buf); err != nil {
			c.end(fmt.Errorf("tmux write: %w", err))
			c.closeRW()
			return
		}
	}
}

// read reads the stream to its end, handing replies to their calls and notifications to onNote.
func (c *Client) read() {
	defer close(c.done)
	err := c.readStream()
	c.end(err)
	c.closeRW()
}

func (c *Client) readStream() error {
	lr := lineReader{r: bufio.NewReaderSize(c.rw, 64<<10), max: MaxLine}
	var p parser
	for {
		line, err := lr.next()
		switch {
		case err == io.EOF && p.open:
			return fmt.Errorf("tmux stream ended inside a reply: %w", io.ErrUnexpectedEOF)
		case err == io.EOF:
			return fmt.Errorf("tmux stream ended without %%exit: %w", io.ErrUnexpectedEOF)
		case err != nil:
			return err
		}
		now := int64(time.Since(c.started))
		c.heard.Store(now)
		ev, err := p.feed(line)
		if err != nil {
			return err
		}
		if p.open && p.ours {
			c.replying.Store(now)
		}
		switch {
		case ev.reply != nil:
			if err := c.deliver(*ev.reply); err != nil {
				return err
			}
		case ev.note != nil:
			if c.onNote != nil {
				c.onNote(c, ev.note)
			}
			if exit, ok := ev.note.(Exit); ok {
				return &ExitError{Reason: exit.Reason}
			}
		}
	}
}

// deliver hands a reply to the call that has waited longest.
func (c *Client) deliver(r reply) error {
	c.mu.Lock()
	if len(c.sent) == 0 {
		c.mu.Unlock()
		return fmt.Errorf("%w: a reply came when no command was waiting", ErrProtocol)
	}
	cl := c.sent[0]
	c.sent[0] = nil
	c.sent = c.sent[1:]
	c.replied = time.Now()
	c.mu.Unlock()
	cl.reply <- r
	return nil
}

// lineReader reads lines of at most max bytes.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// next returns the next line without its newline; the line is valid until the next call. It
// returns io.EOF itself when the stream ends after a whole line, and an error wrapping
// io.ErrUnexpectedEOF when it ends inside one.
func (lr *lineReader) next() ([]byte, error) {
	if cap(lr.buf) > 1<<20 {
		lr.buf = nil // one long line should not pin its memory for the client's life
	}
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		n := len(lr.buf) + len(chunk)
		if err == nil {
			n-- // the newline
		}
		if n > lr.max {
			return nil, fmt.Errorf("tmux sent a line longer than %d bytes: %w", lr.max, ErrTooLong)
		}
		switch {
		case err == nil && len(lr.buf) == 0:
			return chunk[:len(chunk)-1], nil
		case err == nil:
			lr.buf = append(lr.buf, chunk[:len(chunk)-1]...)
			return lr.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			lr.buf = append(lr.buf, chunk...)
		case errors.Is(err, io.EOF) && n == 0:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("tmux stream ended in the middle of a line: %w", io.ErrUnexpectedEOF)
		default:
			return nil, fmt.Errorf("tmux read: %w", err)
		}
	}
}

// parser tells replies from notifications, one line at a time. A reply is the lines between
// "%begin TIME NUMBER FLAGS" and "%end" or "%error" followed by the same three fields; in between,
// every line is the reply's, whatever it starts with. Outside a reply every line is a
// notification.
type parser struct {
	open  bool   // inside a reply
	guard []byte // " TIME NUMBER FLAGS" of the open reply
	ours  bool   // the open reply answers a command this client sent (flags 1)
	lines []string
	size  int
}

// event is what one line completes: a reply to a command of ours, a notification, or neither.
type event struct {
	reply *reply
	note  Notification
}

var (
	beginPrefix = []byte("%begin ")
	endPrefix   = []byte("%end ")
	errorPrefix = []byte("%error ")
)

// feed takes one line without its newline. Its only error is a reply over MaxReply.
func (p *parser) feed(line []byte) (event, error) {
	if !p.open {
		if !bytes.HasPrefix(line, beginPrefix) {
			return event{note: parseNotification(line)}, nil
		}
		flags, ok := parseGuard(line[len(beginPrefix):])
		if !ok {
			return event{note: Unknown{Line: string(line), Err: fmt.Errorf("%w: %%begin without TIME NUMBER FLAGS", ErrMalformed)}}, nil
		}
		p.open, p.ours = true, flags&1 != 0
		p.guard = append(p.guard[:0], line[len(beginPrefix)-1:]...)
		p.lines, p.size = nil, 0
		return event{}, nil
	}

	failed := false
	switch {
	case bytes.HasPrefix(line, endPrefix) && bytes.Equal(line[len(endPrefix)-1:], p.guard):
	case bytes.HasPrefix(line, errorPrefix) && bytes.Equal(line[len(errorPrefix)-1:], p.guard):
		failed = true
	default:
		p.size += len(line) + 16 // a string header, so that a flood of empty lines counts too
		if p.size > MaxReply {
			return event{}, fmt.Errorf("tmux sent a reply of more than %d bytes: %w", MaxReply, ErrTooLong)
		}
		p.lines = append(p.lines, string(line))
		return event{}, nil
	}

	p.open = false
	lines := p.lines
	p.lines = nil
	if !p.ours {
		return event{note: UnsolicitedReply{Lines: lines, Failed: failed}}, nil
	}
	if failed {
		return event{reply: &reply{err: &CommandError{Lines: lines}}}, nil
	}
	if lines == nil {
		lines = []string{}
	}
	return event{reply: &reply{lines: lines}}, nil
}

// parseGuard parses "TIME NUMBER FLAGS", three unsigned decimal numbers, and returns FLAGS.
func parseGuard(b []byte) (flags uint64, ok bool) {
	fields := bytes.Split(b, []byte{' '})
	if len(fields) != 3 {
		return 0, false
	}
	for i, f := range fields {
		if len(f) == 0 || len(f) > 20 {
			return 0, false
		}
		n, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return 0, false
		}
		if i == 2 {
			flags = n
		}
	}
	return flags, true
}
