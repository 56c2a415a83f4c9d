package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/krad-ade/krad/api"
)

// AskpassName is the name under which the executable is git's askpass program: the app sets
// GIT_ASKPASS to it in its terminals.
const AskpassName = api.AskpassName

// askpassLimit is how long krad-ade-askpass asks, over all of its polls: a little past the
// app's own limit, so that the app's answer (no one answered) comes first.
const askpassLimit = 3*time.Minute + 15*time.Second

// runAskpass is krad-ade-askpass PROMPT, as git (or ssh, through SSH_ASKPASS) runs it: it calls
// the bus as the Git caller of this terminal's environment, {"Git": E}, with Askpass, polls until
// the person answers in the app's UI, and prints the answer for git on stdout. It proves itself
// as every krad does, with the bus token of the terminal's variables (KRAD_ADE_TOKEN, or the file
// KRAD_ADE_TOKEN_FILE names); E and the terminal come from KRAD_ADE_TERMINAL, and the terminal's
// own askpass key (KRAD_ADE_ASKPASS_KEY) proves it, so the app's UI says truly which terminal
// asked. A git the app runs itself has no terminal: KRAD_ADE_GIT names its environment, its key is
// the operation's, and it asks for terminal 0, the app. It names the program that ran it (git,
// ssh), which is its own word. The answer is
// written to stdout only, once. When the git that runs it goes (the reader of its stdout), it
// stops asking, and the prompt leaves the UI.
func (x *invocation) runAskpass(args []string) error {
	if len(args) != 1 {
		return &problem{err: errors.New("krad-ade-askpass takes one argument, git's prompt"), kind: errUsage,
			hint: "git runs it as GIT_ASKPASS; run git, not krad-ade-askpass"}
	}
	b, err := x.bus()
	if err != nil {
		return err
	}
	var env string
	var terminal int
	switch from := b.client.From; {
	case from.Kind == api.CallerTerminal:
		env, terminal = from.Terminal.Environment, from.Terminal.Terminal
	case x.env(api.VarGit) != "":
		env = x.env(api.VarGit)
		if err := api.ValidEnvironment(env); err != nil {
			return &problem{err: fmt.Errorf("%s=%s: %w", api.VarGit, quote(env), err), hint: "krad-ade sets it for the gits it runs itself; unset it elsewhere"}
		}
	default:
		return &problem{err: errors.New("KRAD_ADE_TERMINAL is not set: krad-ade-askpass answers git's prompts in krad-ade's terminals only"),
			hint: "unset GIT_ASKPASS outside krad-ade's terminals"}
	}
	b.client.From = api.Caller{Kind: api.CallerGit, Environment: env}
	body := &api.AskpassBody{Prompt: args[0], Kind: promptKind(args[0]), Terminal: terminal,
		Key: x.env(api.VarAskpassKey), Program: askingProgram()}
	if body.Key != "" {
		if _, err := api.ParseToken(body.Key); err != nil {
			return &problem{err: fmt.Errorf("%s is not an askpass key the app gave", api.VarAskpassKey),
				hint: "krad-ade sets it in the terminals it opens; unset it, or open a new terminal"}
		}
	}
	ctx, cancel := context.WithTimeout(x.ctx, askpassLimit)
	defer cancel()
	if f, ok := x.stdout.(*os.File); ok {
		ctx = cancelWhenReaderGone(ctx, f)
	}
	for {
		var ans api.AskpassAnswer
		if _, err := b.answer(ctx, api.NewRequest(api.Askpass, body), &ans); err != nil {
			return err
		}
		if !ans.Secret.IsZero() {
			_, err := io.WriteString(x.stdout, ans.Secret.Reveal()+"\n")
			return err
		}
		if ans.Pending == "" {
			return errors.New("the app answered Askpass with neither an answer nor a pending id")
		}
		body.Pending = ans.Pending
	}
}

// promptKind is what git's prompt asks for, from its words: git asks "Username for 'https://…': "
// and "Password for 'https://…': ", ssh "Enter passphrase for key '…': ".
func promptKind(prompt string) string {
	p := strings.ToLower(prompt)
	switch {
	case strings.HasPrefix(p, "username"):
		return api.AskUsername
	case strings.Contains(p, "passphrase"):
		return api.AskPassphrase
	case strings.HasPrefix(p, "password") || strings.Contains(p, "password:"):
		return api.AskPassword
	}
	return ""
}

// appGitEnv is what the gits of `krad-ade-agents worktree` get so that their prompts reach the
// person, as the app gave it to the verb on the host (api.TerminalVars.AppGitEnv): the verb's own
// GIT_ASKPASS and bus variables, when KRAD_ADE_GIT says they are the app's, and key, the
// operation's askpass key, which came with the operation on stdin (never on the verb's command
// line, which every user of the host can read). (package worktree drops GIT_ASKPASS from the
// environment it inherits: only this way does it come back.)
func appGitEnv(env Env, key string) []string {
	if env(api.VarGit) == "" || env(api.VarGitAskpass) == "" {
		return nil
	}
	var vars []string
	for _, name := range []string{api.VarGitAskpass, api.VarEndpoint, api.VarToken, api.VarTokenFile, api.VarTerminal, api.VarGit} {
		vars = append(vars, name+"="+env(name))
	}
	return append(vars, api.VarAskpassKey+"="+key)
}

// askingProgram is the name of the program that ran this askpass, as this computer's kernel says
// (procParent):
// "git" for git and its helpers (git-remote-https), "ssh" for an SSH key's passphrase, else the
// process's own name (sh, for a script); "" where it cannot be read, or the name is none the app
// would show. It is what the modal names as the asker: the askpass's own word, which the app
// does not prove.
func askingProgram() string {
	comm, _, ok := procParent(os.Getppid())
	switch {
	case !ok:
		return ""
	case strings.HasPrefix(comm, "git"):
		return "git"
	case strings.HasPrefix(comm, "ssh"):
		return "ssh"
	case api.ProgramName(comm):
		return comm
	}
	return ""
}

// parseProcStat reads the name and the parent of a /proc/PID/stat line.
func parseProcStat(s string) (comm string, ppid int, ok bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 {
		return "", 0, false
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 1 {
		return "", 0, false
	}
	return s[open+1 : end], n, true
}
