package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/krad-ade/krad/api"
)

// baselineMode is the hidden command that runs the baseline server in a process of its own.
const baselineMode = "serve-baseline"

// baselineLineTimeout is the baseline's read deadline, the bus's 10 seconds: a plain server
// still bounds how long a client may hold a connection.
const baselineLineTimeout = 10 * time.Second

// serveBaseline is the baseline: a plain Go TCP server that reads one line and writes answer (a
// whole line, newline included) back on every connection, then closes it. Like the bus it serves
// each connection on a goroutine of its own and sets a read and a write deadline; unlike the bus
// it checks nothing. It returns nil once ctx is done and every connection is closed.
func serveBaseline(ctx context.Context, ln net.Listener, answer []byte) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("accept: %w", err)
			}
			time.Sleep(5 * time.Millisecond) // out of file descriptors: wait, as the bus does
			continue
		}
		wg.Go(func() {
			defer conn.Close()
			_ = conn.SetReadDeadline(time.Now().Add(baselineLineTimeout))
			if _, err := bufio.NewReader(conn).ReadSlice('\n'); err != nil {
				return
			}
			_ = conn.SetWriteDeadline(time.Now().Add(baselineLineTimeout))
			_, _ = conn.Write(answer)
		})
	}
}

// serveBaselineCmd is `krad-bench serve-baseline --answer LINE`: it listens on 127.0.0.1, prints
// its address as the first line of stdout, and serves until ctx is done or stdin closes.
func serveBaselineCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("krad-bench "+baselineMode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	answer := fs.String("answer", "", "the answer `LINE` to every request, without its newline")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *answer == "" || strings.ContainsAny(*answer, "\r\n") || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "krad-bench: error: serve-baseline takes one --answer LINE")
		return exitUsage
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(stderr, "krad-bench: error: listen on 127.0.0.1: %v\n", err)
		return exitFailed
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if stdin != nil {
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			cancel()
		}()
	}
	if _, err := fmt.Fprintln(stdout, ln.Addr().String()); err != nil {
		ln.Close()
		return exitFailed
	}
	if err := serveBaseline(ctx, ln, []byte(*answer+"\n")); err != nil {
		fmt.Fprintf(stderr, "krad-bench: error: baseline: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// baselineProc is the baseline running in a child process: the same executable in
// serve-baseline mode.
type baselineProc struct {
	proc  *child
	stdin io.WriteCloser
	addr  string
}

// startBaseline starts self in serve-baseline mode answering answer (a line with its newline)
// and reads its address.
func startBaseline(ctx context.Context, self string, env []string, answer []byte, stderr io.Writer) (*baselineProc, error) {
	line := strings.TrimSuffix(string(answer), "\n")
	cmd := exec.Command(self, baselineMode, "--answer", line)
	cmd.Env = childEnv(env)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("baseline stdin: %w", err)
	}
	// A pipe of our own rather than StdoutPipe, which Wait would close under the reader.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("baseline stdout: %w", err)
	}
	defer pr.Close()
	cmd.Stdout = pw
	proc, err := startChild(cmd)
	pw.Close()
	if err != nil {
		stdin.Close()
		return nil, fmt.Errorf("start the baseline: %w", err)
	}
	b := &baselineProc{proc: proc, stdin: stdin}
	got := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(pr).ReadString('\n')
		got <- strings.TrimSpace(s)
	}()
	select {
	case b.addr = <-got:
	case <-ctx.Done():
		b.stop()
		return nil, fmt.Errorf("start the baseline: %w", context.Cause(ctx))
	case <-time.After(10 * time.Second):
		b.stop()
		return nil, errors.New("the baseline printed no address within 10s")
	}
	if err := api.CheckEndpoint(b.addr); err != nil {
		b.stop()
		return nil, fmt.Errorf("the baseline listens at %q: %w", b.addr, err)
	}
	return b, nil
}

// stop closes the baseline's stdin, which ends it; SIGTERM and then SIGKILL follow if it lingers.
func (b *baselineProc) stop() {
	_ = b.stdin.Close()
	select {
	case <-b.proc.done:
		return
	case <-time.After(2 * time.Second):
	}
	_ = b.proc.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.proc.done:
	case <-time.After(5 * time.Second):
		_ = b.proc.cmd.Process.Kill()
		<-b.proc.done
	}
}
