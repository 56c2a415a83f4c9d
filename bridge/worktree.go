package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/remote"
	"github.com/krad-ade/krad/remote/shell"
	"github.com/krad-ade/krad/worktree"
)

// WorktreesDir is the folder under the host's home that holds the checkouts of its groups (the
// worktrees root of package worktree), made and checked like the other folders under ~/.krad-ade:
// a group's checkout is where its worker runs, so no other user may choose it.
const WorktreesDir = "~/.krad-ade/worktrees"

// Worktree runs a group operation on the host, where the environment's repository is: one SSH
// exec of the static krad installed there, `krad-ade-agents worktree`, with op on its stdin (its
// Dir the environment's folder, "" the home; its Root ~/.krad-ade/worktrees) and the Result as one
// line of JSON on its stdout. It does not wait for a connection: while the host is not connected
// it answers unavailable, with the connection's status. ctx is the request's deadline: when it
// ends, the host is asked to send the command SIGTERM and the session is closed, either of which
// makes the command cancel the operation (a group half made is undone, git is stopped).
func (e *Environment) Worktree(ctx context.Context, op worktree.Op) (worktree.Result, error) {
	e.mu.Lock()
	connected, vars, home := e.connected, e.vars, e.home
	e.mu.Unlock()
	client := e.conn.Client()
	if !isClosed(connected) || client == nil {
		return worktree.Result{}, api.Errorf(api.CodeUnavailable, "environment %s is not connected, so its groups cannot be reached: %s",
			e.cfg.Name, e.conn.Status()).WithReason(api.ReasonEnvironmentDown)
	}
	op.Dir = vars.Dir
	if !strings.HasPrefix(op.Dir, "/") {
		op.Dir = strings.TrimSuffix(home+"/"+op.Dir, "/")
	}
	op.Root = home + strings.TrimPrefix(WorktreesDir, "~")
	if !utf8.ValidString(op.Dir) || !utf8.ValidString(op.Root) {
		// JSON carries only UTF-8 strings: the host would be given another folder.
		return worktree.Result{}, api.Errorf(api.CodeUnavailable, "the folder of environment %s on the host, %s, is not UTF-8, "+
			"and groups need its path passed on as it is: give the environment a folder whose path is UTF-8",
			e.cfg.Name, termsafe.Quote(op.Dir))
	}
	in, err := json.Marshal(op)
	if err != nil {
		return worktree.Result{}, fmt.Errorf("the group operation: %w", err)
	}
	// The answer holds a patch of up to api.MaxPatch bytes, in base64 on the wire, and the list
	// of files: the bus's own bound on an answer's line, not the 1 MiB of the host's other
	// commands.
	h := remote.SSHWith(client, remote.Options{MaxStdout: api.MaxAnswerLine, Stop: ssh.SIGTERM})
	out, err := h.Run(ctx, appGitEnv(e.cfg.Name, vars.TerminalVars)+shell.Quote(vars.BinDir+"/krad-ade-agents")+" worktree", bytes.NewReader(in))
	if err != nil {
		if ctx.Err() != nil {
			return worktree.Result{}, fmt.Errorf("the group operation on the host: %w", context.Cause(ctx))
		}
		return worktree.Result{}, fmt.Errorf("krad-ade-agents worktree on the host: %w", err)
	}
	return readResult(out)
}

// readResult reads the Result krad-ade-agents worktree printed: the last line of out. What the
// host's shell start-up files print comes before it, and may end without a newline, so that
// the line starts with it: the Result is then found at one of the first few '{' of the line.
func readResult(out []byte) (worktree.Result, error) {
	line := bytes.TrimSuffix(out, []byte("\n"))
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	var res worktree.Result
	err := errors.New("no '{'")
	for try, rest := 0, line; try < maxNoiseTries; try++ {
		i := bytes.IndexByte(rest, '{')
		if i < 0 {
			break
		}
		res = worktree.Result{}
		if err = json.Unmarshal(rest[i:], &res); err == nil {
			return res, nil
		}
		rest = rest[i+1:]
	}
	return worktree.Result{}, fmt.Errorf("krad-ade-agents worktree on the host printed no result (%s): %s",
		termsafe.Escape(err.Error(), 150), termsafe.Escape(string(line), 200))
}

// maxNoiseTries is how many '{' of the result's line readResult tries: noise before the result
// has few, if any.
const maxNoiseTries = 8
