package bridge

import (
	"strings"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/remote/shell"
)

// appGitEnv is the front of the host's command line for `krad-ade-agents worktree` that gives
// the gits of a group operation there what a git the app runs itself gets
// (api.TerminalVars.AppGitEnv): a prompt of theirs (a credential a filter needs during a
// checkout) reaches the person as the Git caller of environment env, terminal 0, through the
// host's forward. It is "exec " alone when the terminals there get no GIT_ASKPASS (the user
// has an askpass of their own). The values are quoted, the token stays in its file, and the operation's askpass key
// goes on stdin (worktree.Op.AskpassKey): nothing secret is on the host's command line.
func appGitEnv(env string, v api.TerminalVars) string {
	vars := v.AppGitEnv(env, api.Token{}) // the key goes with the operation, on stdin
	if len(vars) == 0 {
		return "exec "
	}
	var b strings.Builder
	b.WriteString("exec env")
	for _, kv := range vars {
		b.WriteByte(' ')
		b.WriteString(shell.Quote(kv))
	}
	b.WriteByte(' ')
	return b.String()
}
