package worktree

import "context"

// promptKey is the context key of WithPrompts.
type promptKey struct{}

// WithPrompts is ctx under which the gits an operation runs ask their prompts through env: the
// variables, as NAME=value, that send a prompt to the person (GIT_ASKPASS, and what the askpass
// program needs to reach them; api.TerminalVars.AppGitEnv). Without it a git here never prompts:
// GIT_ASKPASS is dropped from the process's environment and GIT_TERMINAL_PROMPT=0. git asks only
// when a credential helper had no answer, and only for what a filter or a fetch of the operation
// needs (a Git LFS smudge during a checkout, say): nothing this package runs itself goes to the
// network.
func WithPrompts(ctx context.Context, env []string) context.Context {
	if len(env) == 0 {
		return ctx
	}
	return context.WithValue(ctx, promptKey{}, env)
}

// promptEnv is the env of WithPrompts under ctx, or nil.
func promptEnv(ctx context.Context) []string {
	env, _ := ctx.Value(promptKey{}).([]string)
	return env
}
