package local

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
)

// The bound on what connections hold before their token is checked. Anyone on this computer can
// connect to the bus, and anyone on an SSH host to its forward, without the token: each such
// connection costs a goroutine and, once it sends, the part of its line that has arrived. Left
// unbounded, 5,000 connections holding 64,000 bytes each took the app to 624 MB.
//
// So each way into the bus (the listener, and Pipe for each SSH forward) has a gate: at most
// PendingConns connections that have not passed the token check (still reading their line, or
// refused and draining in lingerClose), holding at most PendingBytes of line buffers between them.
// When a new connection would pass the count, the gate drops the connection that has waited
// longest; when a growing line would pass the bytes, the one that has waited longest among those
// that hold part of a line (an idle one frees nothing). It is answered unavailable and closed.
//
// Why the oldest: a legitimate client writes its whole line at once after connecting (the CLI
// does, and so does printf | nc), so its line is read within a moment of the connect and it
// leaves the gate long before it could be the oldest; a flood holds its connections open with
// partial lines, so under a flood the oldest connections are the flood's. Dropping the largest
// instead would drop a legitimate Send (up to 64 KiB) in favour of a flood of small partial
// lines. Age counts from the connect, not from the last byte, so trickling bytes buys nothing.
// Among the oldest, one whose socket holds bytes the bus has not read yet is passed over: it
// waits on the bus, not on its client. That is a legitimate line that arrived late (through an
// SSH forward, behind the flood's own bytes) and whose goroutine has not run yet on a busy
// machine; a flood's connection, read to its last byte, waits on its client and goes first.
// Each origin has a gate of its own (this computer's listener, and each SSH environment's
// forward), so that a flood through a host's forward (another user of that host) cannot crowd out
// this computer's terminals nor another host's, nor a flood on this computer the hosts'
// terminals, whose lines arrive later, after the SSH round trip. What connections without their
// token hold is bounded by (1 + the number of SSH environments) gates.
//
// An idle connection holds no line buffer: its first byte is read into the waiter itself, and
// the buffer (1 KiB, doubled as the line grows, up to the 64 KiB limit) is charged to the gate
// before it is taken. Buffers are reused (a pool for each size), so that a flood, whose buffers
// are dropped and taken again all the time, leaves little garbage: the memory the lines take
// stays near what the gate charges, rather than twice that until the collector runs.

// Defaults of Config.PendingConns and Config.PendingBytes.
const (
	DefaultPendingConns = 512
	DefaultPendingBytes = 2 << 20
)

// bufSizes are the sizes a line's buffer takes, one after the other as the line grows: most
// request lines are well under 1 KiB; the last holds the longest line and its newline.
var bufSizes = [...]int{1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, api.MaxRequestLine + 1}

// bufPools keep the buffers of each size for reuse.
var bufPools [len(bufSizes)]sync.Pool

// takeBuf returns an empty buffer of size i.
func takeBuf(i int) []byte {
	if b, ok := bufPools[i].Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, bufSizes[i])
}

// giveBuf gives back a buffer takeBuf made.
func giveBuf(b []byte) {
	for i, n := range bufSizes {
		if cap(b) == n {
			bufPools[i].Put(&b)
			return
		}
	}
}

// gate bounds the connections of one origin that have not passed the token check.
type gate struct {
	origin access.Origin // for the log
	max    int           // connections
	budget int           // bytes of line buffers
	log    *slog.Logger
	drops  minuteLog

	mu         sync.Mutex
	n, held    int
	head, tail *waiter // oldest first
}

func newGate(origin access.Origin, conns, budget int, log *slog.Logger) *gate {
	// One line of the longest length must always fit, with room to spare.
	budget = max(budget, 2*(api.MaxRequestLine+1))
	return &gate{origin: origin, max: max(conns, 1), budget: budget, log: log}
}

// minuteLog lets a warning through at most once a minute: a flood makes one line a minute, not
// one a connection.
type minuteLog struct {
	mu   sync.Mutex
	at   time.Time
	seen int // events since the last line logged
}

// allow counts one event and says whether to log it now, with how many events the line stands
// for (this one and those held back since the last line).
func (l *minuteLog) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen++
	if !l.at.IsZero() && now.Sub(l.at) < time.Minute {
		return false, 0
	}
	n := l.seen
	l.at, l.seen = now, 0
	return true, n
}

// waiter is one connection in a gate.
type waiter struct {
	g    *gate
	conn net.Conn
	raw  syscall.RawConn // conn's socket, for unread; nil when conn has none
	// buf holds the line as it arrives, in a buffer of size bufSizes[size]. It goes back to its
	// pool at leave. Only w's goroutine touches them.
	buf   []byte
	size  int
	first [1]byte

	prev, next *waiter // under g.mu
	in         bool    // in the gate; under g.mu
	charged    int     // the size of buf, charged to the gate while w is in it; under g.mu
	dropped    atomic.Bool
}

// enter puts conn in the gate as its newest connection, dropping the oldest when the gate is full.
func (g *gate) enter(conn net.Conn) *waiter {
	w := &waiter{g: g, conn: conn, in: true}
	if sc, ok := conn.(syscall.Conn); ok {
		w.raw, _ = sc.SyscallConn()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	w.prev = g.tail
	if g.tail != nil {
		g.tail.next = w
	} else {
		g.head = w
	}
	g.tail = w
	g.n++
	for g.n > g.max {
		g.dropLocked(g.oldestLocked(w, false))
	}
	return w
}

// passOver is how many of the oldest connections the gate looks at for one that waits on its
// client, before it drops the oldest whatever it waits on.
const passOver = 32

// oldestLocked is the connection to drop: the oldest but w that has no bytes waiting to be read,
// among the passOver oldest, else the oldest but w; nil when there is none. With holding, only
// connections charged a line buffer count: the byte bound drops one that frees bytes, never an
// idle connection, which holds none (the count bound in enter takes the oldest of any kind).
func (g *gate) oldestLocked(w *waiter, holding bool) *waiter {
	var first *waiter
	seen := 0
	for v := g.head; v != nil && seen < passOver; v = v.next {
		if v == w || holding && v.charged == 0 {
			continue
		}
		if first == nil {
			first = v
		}
		if !v.unread() {
			return v
		}
		seen++
	}
	return first
}

// unread says whether bytes wait in w's socket that the bus has not read.
func (w *waiter) unread() bool {
	if w.raw == nil {
		return false
	}
	n := 0
	_ = w.raw.Control(func(fd uintptr) { n = unreadBytes(int(fd)) })
	return n > 0
}

// leave takes w out of the gate, if it is still in, releases what it was charged, and gives its
// buffer back. Only w's own goroutine calls it, once done with the buffer; calling it again does
// nothing.
func (w *waiter) leave() {
	g := w.g
	g.mu.Lock()
	if w.in {
		g.removeLocked(w)
	}
	g.mu.Unlock()
	if w.buf != nil {
		giveBuf(w.buf)
		w.buf = nil
	}
}

func (g *gate) removeLocked(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		g.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		g.tail = w.prev
	}
	w.prev, w.next, w.in = nil, nil, false
	g.n--
	g.held -= w.charged
}

// dropLocked drops w: out of the gate, and its blocked read woken, which then answers and
// closes. Its buffer counts as released at once: its goroutine gives it back within a moment.
func (g *gate) dropLocked(w *waiter) {
	g.removeLocked(w)
	w.dropped.Store(true)
	_ = w.conn.SetReadDeadline(time.Unix(1, 0))
	if ok, n := g.drops.allow(time.Now()); ok {
		g.log.Warn("connections without their line dropped, the oldest first: too many were waiting (a flood?)",
			"origin", g.origin.String(), "dropped", n, "max", g.max, "budget_bytes", g.budget)
	}
}

// grow gives w its first line buffer, or the next size up, keeping what it holds, once the gate
// has charged it, dropping the oldest other connections if the budget needs it. It reports
// false when w has been dropped, or holds the largest buffer already.
func (w *waiter) grow() bool {
	size := 0
	if w.buf != nil {
		size = w.size + 1
	}
	if size == len(bufSizes) {
		return false
	}
	g := w.g
	g.mu.Lock()
	if !w.in {
		g.mu.Unlock()
		return false
	}
	extra := bufSizes[size] - w.charged
	for g.held+extra > g.budget {
		v := g.oldestLocked(w, true)
		if v == nil {
			break // w alone holds bytes: the budget always holds one line
		}
		g.dropLocked(v)
	}
	g.held += extra
	w.charged += extra
	g.mu.Unlock()
	b := append(takeBuf(size), w.buf...)
	if w.buf != nil {
		giveBuf(w.buf)
	}
	w.buf, w.size = b, size
	return true
}

// setReadDeadline sets the read deadline unless w was dropped, whose past deadline must stay.
func (w *waiter) setReadDeadline(t time.Time) {
	w.g.mu.Lock()
	defer w.g.mu.Unlock()
	if !w.dropped.Load() {
		_ = w.conn.SetReadDeadline(t)
	}
}

// errDropped is the answer of a connection the gate dropped.
func errDropped(g *gate) error {
	return api.Dropped(fmt.Sprintf("it was holding as many connections without a complete line as it takes (%d, with %d KiB "+
		"of lines), and this one had waited longest: write the whole line at once after connecting, and try again", g.max, g.budget>>10))
}

// readLine reads the request line, of at most api.MaxRequestLine bytes before its "\n", and
// returns a copy of it without the newline. It refuses a longer line as soon as it passes the
// limit, without waiting for the newline. Its errors are *api.Error: bad_request for the line
// itself (a read deadline unwraps to os.ErrDeadlineExceeded), unavailable when the gate dropped
// the connection.
func (w *waiter) readLine() ([]byte, error) {
	const limit = api.MaxRequestLine
	// The first byte, into the waiter: a connection that sends nothing holds no line buffer.
	n, err := w.conn.Read(w.first[:])
	if n == 0 {
		return nil, w.lineError(err, "the connection closed before a line arrived")
	}
	if !w.grow() {
		return nil, errDropped(w.g)
	}
	w.buf = append(w.buf, w.first[0])
	scanned := 0
	for {
		if i := bytes.IndexByte(w.buf[scanned:], '\n'); i >= 0 {
			if scanned+i > limit {
				return nil, tooLong(limit)
			}
			return bytes.Clone(w.buf[:scanned+i]), nil
		}
		scanned = len(w.buf)
		if len(w.buf) > limit {
			return nil, tooLong(limit)
		}
		if len(w.buf) == cap(w.buf) && !w.grow() {
			return nil, errDropped(w.g)
		}
		n, err := w.conn.Read(w.buf[len(w.buf):cap(w.buf)])
		w.buf = w.buf[:len(w.buf)+n]
		if n == 0 && err != nil {
			return nil, w.lineError(err, "the line did not end in a newline")
		}
	}
}

// lineError is the error of a read that ended the line: eof is what to say of the end of input.
func (w *waiter) lineError(err error, eof string) error {
	switch {
	case w.dropped.Load():
		return errDropped(w.g)
	case errors.Is(err, io.EOF):
		return &lineErr{api.Errorf(api.CodeBadRequest, "%s", eof), err}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &lineErr{api.Errorf(api.CodeBadRequest, "no request line arrived in time"), err}
	}
	return &lineErr{api.Errorf(api.CodeBadRequest, "reading the line failed"), err}
}

func tooLong(max int) error {
	return api.Errorf(api.CodeBadRequest, "the line is longer than %d bytes", max)
}

// lineErr is an error answer with what the read returned underneath.
type lineErr struct {
	answer *api.Error
	cause  error
}

func (e *lineErr) Error() string   { return e.answer.Error() }
func (e *lineErr) Unwrap() []error { return []error{e.answer, e.cause} }

// drain reads and drops what the client still sends, into w's own buffer, until the deadline,
// limit bytes, the end of input, or the gate dropping w.
func (w *waiter) drain(deadline time.Time, limit int) {
	if w.buf == nil && !w.grow() {
		return
	}
	w.setReadDeadline(deadline)
	b := w.buf[:cap(w.buf)]
	for limit > 0 {
		n, err := w.conn.Read(b[:min(len(b), limit)])
		limit -= n
		if err != nil {
			return
		}
	}
}
