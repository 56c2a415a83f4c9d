package forward

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// A client on the host that shuts down its writing side after its request (nc -N) and one that
// closes its socket look the same through SSH: the host's sshd reads the end of input either way
// and sends the channel's EOF, and it notices a closed socket only when it next writes to it. The
// target must tell them apart (a close cancels what the client waited for; a half-close does
// not), so once a forwarded connection's input has ended, hostEnds asks the host about the
// client's socket: while a process there holds it, the client has half-closed; once none does
// (it lingers in FIN_WAIT2 with inode 0) or it is gone, the client has closed, and pipe closes
// both sides, which the target sees as the close it is.

// hostEndsEvery is how often hostEnds reads the host's sockets while a connection waits on it.
const hostEndsEvery = time.Second

// hostEnds watches, on one connection's host, the clients' sockets of forwarded connections
// whose input has ended. It reads the host's /proc/net/tcp and tcp6 through a shell it starts on
// the first connection to watch and ends when none is left: one read a second for all of them.
// Each read has the deadline of every command of a connect (Config.CommandTimeout): a shell that
// does not answer in time (a ~/.bashrc that waits) is dropped, and the next read starts another.
type hostEnds struct {
	ctx     context.Context // the SSH connection's
	client  *ssh.Client
	host    string // as configured, for a *TimeoutError
	port    int    // the forward's port on the host
	timeout time.Duration
	log     *slog.Logger
	every   time.Duration

	mu      sync.Mutex
	waiting map[netip.AddrPort][]chan struct{} // by the client's address on the host
	polling bool

	// Failures since the last warning, and when that was: only poll touches them.
	failed   int
	warnedAt time.Time
}

func newHostEnds(ctx context.Context, client *ssh.Client, host string, port int, timeout time.Duration, log *slog.Logger) *hostEnds {
	return &hostEnds{ctx: ctx, client: client, host: host, port: port, timeout: timeout, log: log, every: hostEndsEvery,
		waiting: map[netip.AddrPort][]chan struct{}{}}
}

// hostEndsWarnEvery is how often, at most, a failure to read the host's sockets is logged.
const hostEndsWarnEvery = time.Minute

// warn logs a failure to read the host's sockets, at most once every hostEndsWarnEvery, with the
// number of failures since the last time.
func (h *hostEnds) warn(msg string, err error) {
	h.failed++
	if now := time.Now(); now.Sub(h.warnedAt) >= hostEndsWarnEvery {
		h.log.Warn(msg+": a client there that closes its connection may be noticed late",
			"host", h.host, "err", err, "failures", h.failed)
		h.warnedAt, h.failed = now, 0
	}
}

// closed waits until the host's client at addr (a forwarded connection's RemoteAddr: the
// client's address on the host) has closed its socket, and reports true; false when ctx ends
// first, or addr is not an address it can look for.
func (h *hostEnds) closed(ctx context.Context, addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	if !ok || ta.Port == 0 {
		<-ctx.Done()
		return false
	}
	origin := unmapAddrPort(ta.AddrPort())
	ch := make(chan struct{})
	h.mu.Lock()
	h.waiting[origin] = append(h.waiting[origin], ch)
	if !h.polling {
		h.polling = true
		go h.poll()
	}
	h.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		h.mu.Lock()
		defer h.mu.Unlock()
		chs := h.waiting[origin]
		for i, c := range chs {
			if c == ch {
				chs = append(chs[:i], chs[i+1:]...)
				break
			}
		}
		if len(chs) == 0 {
			delete(h.waiting, origin)
		} else {
			h.waiting[origin] = chs
		}
		return false
	}
}

// poll reads the host's sockets every h.every while connections wait, and lets go of those whose
// client is gone. A read that fails, or a table it cannot find, decides nothing: a client counts
// as there until the host shows otherwise.
func (h *hostEnds) poll() {
	r := &socketReader{h: h}
	defer r.close()
	t := time.NewTicker(h.every)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			h.mu.Lock()
			h.polling = false
			h.mu.Unlock()
			return
		case <-t.C:
		}
		h.mu.Lock()
		if len(h.waiting) == 0 {
			h.polling = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		held, ok := r.read()
		if !ok {
			continue
		}
		h.mu.Lock()
		missing := len(notHeld(h.waiting, held)) > 0
		h.mu.Unlock()
		if missing {
			// One read can miss a socket that is there: the kernel lists the table a page at a
			// time, and lines move between pages when other sockets open and close meanwhile (a
			// busy host's). A client is let go only when a second read does not show it either.
			again, ok := r.read()
			if !ok {
				continue
			}
			for origin := range again {
				held[origin] = true
			}
		}
		h.mu.Lock()
		for _, origin := range notHeld(h.waiting, held) {
			for _, ch := range h.waiting[origin] {
				close(ch)
			}
			delete(h.waiting, origin)
		}
		h.mu.Unlock()
	}
}

// A socketReader reads the host's sockets for poll, through a shell of its own on the host,
// started at the first read and again after one that failed.
type socketReader struct {
	h  *hostEnds
	sh *hostShell // nil until a read starts it, and after a read that failed
}

// read returns the clients the host's sockets show held; false when the read failed or found no
// table, which decides nothing.
func (r *socketReader) read() (map[netip.AddrPort]bool, bool) {
	h := r.h
	if r.sh == nil {
		sh, err := startShell(h.client)
		if err != nil {
			h.warn("watching the host's clients: no shell", err)
			return nil, false
		}
		r.sh = sh
	}
	var out []byte
	err := Within(h.ctx, h.host, "reading the host's sockets", h.timeout, func(ctx context.Context) (err error) {
		out, err = r.sh.run(ctx, tcpScript(h.port))
		return err
	})
	if err != nil {
		if h.ctx.Err() == nil {
			h.warn("watching the host's clients: reading the sockets failed", err)
		}
		r.close()
		return nil, false
	}
	if !bytes.Contains(out, []byte("local_address")) {
		return nil, false // no table to read: nothing to decide
	}
	return heldClients(parseProcNetTCP(out), h.port), true
}

// close ends the reader's shell, if it has one.
func (r *socketReader) close() {
	if r.sh != nil {
		r.sh.close()
		r.sh = nil
	}
}

// notHeld lists the clients waited on that held does not show.
func notHeld(waiting map[netip.AddrPort][]chan struct{}, held map[netip.AddrPort]bool) []netip.AddrPort {
	var out []netip.AddrPort
	for origin := range waiting {
		if !held[origin] {
			out = append(out, origin)
		}
	}
	return out
}

// heldClients are the addresses of the clients of the forward on port whose socket a process
// still holds: a socket connected to the forward itself, 127.0.0.1:port, with an inode. A socket
// to another address with the same port (127.0.0.2:port, another process's) says nothing about
// the forward's clients, though it may have the same local address as one that closed.
func heldClients(socks []socket, port int) map[netip.AddrPort]bool {
	fwd := netip.AddrPortFrom(netip.MustParseAddr(loopbackHost), uint16(port))
	held := map[netip.AddrPort]bool{}
	for _, s := range socks {
		if unmapAddrPort(s.Remote) == fwd && s.Inode != 0 {
			held[unmapAddrPort(s.Local)] = true
		}
	}
	return held
}

func unmapAddrPort(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
