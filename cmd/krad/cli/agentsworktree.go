package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"unicode/utf8"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/strictjson"
	"github.com/krad-ade/krad/worktree"
)

// MaxOp is the most `krad-ade-agents worktree` reads from stdin. An Op is made from one bus
// request, whose line is at most api.MaxRequestLine (64 KiB), plus the environment's folder and
// the worktrees root, two paths of the host: twice the request line leaves room for both.
const MaxOp = 2 * api.MaxRequestLine

// agentsWorktreeCommand is `krad-ade-agents worktree`, hidden: the app runs it on SSH hosts, one
// SSH exec per group operation, so that git runs where the environment's repository is, through
// the same code (worktree.Do) as on this computer.
func agentsWorktreeCommand() *command {
	return &command{
		name:    "worktree",
		summary: "run one group operation (for krad-ade, over SSH)",
		hidden:  true,
		help: `
Runs one group operation for krad-ade, on the SSH host where an environment's repository is. It
reads the operation as one JSON object (worktree.Op, at most 128 KiB) on stdin, runs it, and
prints what it did as one line of JSON (worktree.Result) on stdout. It exits 0 whenever it
printed a result: what the operation failed at is in the result. It exits 5, with a message on
stderr, only when stdin is not an operation. It takes no arguments: the operation carries
everything, so that nothing passes through a shell.

SIGTERM, SIGHUP, SIGINT, or the reader of its stdout going away (the SSH session closed) cancels
the operation: a group half made is undone, and git is stopped.`,
		run: func(x *invocation, args []string) error {
			if err := x.noArgs(args); err != nil {
				return err
			}
			op, err := readOp(x.stdin)
			if err != nil {
				return &problem{err: fmt.Errorf("read the group operation on stdin: %w", err), kind: errUsage,
					hint: "krad-ade runs " + x.path + " over SSH, with one operation as JSON on stdin"}
			}
			ctx, stop := signal.NotifyContext(x.ctx, syscall.SIGTERM, syscall.SIGHUP, os.Interrupt)
			defer stop()
			if f, ok := x.stdout.(*os.File); ok {
				ctx = cancelWhenReaderGone(ctx, f)
			}
			line, err := json.Marshal(worktree.Do(worktree.WithPrompts(ctx, appGitEnv(x.env, op.AskpassKey)), op))
			if err != nil {
				return fmt.Errorf("write the group operation's result: %w", err)
			}
			if _, err := x.stdout.Write(append(line, '\n')); err != nil {
				return fmt.Errorf("write the group operation's result: %w", err)
			}
			return nil
		},
	}
}

// readOp reads one worktree.Op from r: a JSON object, UTF-8, at most MaxOp bytes, with no key
// the Op does not have (spelled exactly as its tags, case included), none twice, and nothing
// after it but white space (strictjson). A field of another version would
// otherwise be dropped without a word; the app installs the static krad of its own version, so
// one never comes from it.
func readOp(r io.Reader) (worktree.Op, error) {
	var op worktree.Op
	b, err := io.ReadAll(io.LimitReader(r, MaxOp+1))
	if err != nil {
		return op, err
	}
	if len(b) > MaxOp {
		return op, fmt.Errorf("the operation is longer than %d bytes", MaxOp)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return op, errors.New("stdin is empty")
	}
	if b[0] != '{' {
		return op, errors.New("the operation is not a JSON object")
	}
	if !utf8.Valid(b) {
		// encoding/json would put U+FFFD in place of the bytes, and so name another path.
		return op, errors.New("the operation is not UTF-8")
	}
	// Exact keys: encoding/json alone takes "Op" for "op", and the last of two "op"s.
	if err := strictjson.Decode(b, &op); err != nil {
		return worktree.Op{}, fmt.Errorf("the operation is not valid: %w", err)
	}
	return op, nil
}

// cancelWhenReaderGone is ctx, cancelled too when the reader at the other end of f goes away
// (see watchReader): on an SSH host, the session was closed.
func cancelWhenReaderGone(ctx context.Context, f *os.File) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		watchReader(ctx, f)
	}()
	return ctx
}
