package api

import (
	"path"
	"strconv"
	"strings"
)

// The variables the app sets in every terminal and chat process it starts, as the spec's
// authentication page names them ("Inside the app's terminals"). krad finds the bus through them,
// and they win over api.json.
const (
	// VarEndpoint is where the bus is: 127.0.0.1:<port>, or on an SSH host the forward's address
	// there.
	VarEndpoint = "KRAD_ADE_ENDPOINT"
	// VarToken is the bus token. Only the terminals of this computer get it.
	VarToken = "KRAD_ADE_TOKEN"
	// VarTokenFile is the owner-only file that holds the bus token: on SSH hosts instead of
	// VarToken, on this computer beside it. krad reads it first: the app rewrites the file, at
	// the same path, each time it starts (on a host, each time it connects), while a terminal's
	// VarToken is the token of the run that opened it, which a terminal that outlives the run
	// keeps.
	VarTokenFile = "KRAD_ADE_TOKEN_FILE"
	// VarTerminal is the terminal itself, E:N ([TerminalID.String], [ParseTerminalID]): the
	// caller krad names in its requests.
	VarTerminal = "KRAD_ADE_TERMINAL"
	// VarGroup is the group the terminal works in, when it is not the main checkout: its folder
	// is the group's checkout.
	VarGroup = "KRAD_ADE_GROUP"
	// VarPort is the first of the group's block of ports (10 of them), for its dev servers.
	VarPort = "KRAD_ADE_PORT"
	// VarPrefix begins the name of each of them. A process the app starts that is not a terminal
	// (its tmux server, whose windows inherit its environment) must hold none that the app's own
	// process inherited from a terminal it was started in.
	VarPrefix = "KRAD_ADE_"
)

// WindowTerminalOption is the tmux window option in which the app writes, on every window of
// its sessions, the terminal it made of it ("E:N", as [VarTerminal]): a shell that tmux starts
// in a window the app did not open (krad-ade-agents shell, tmux's default-command) learns its
// terminal there.
const WindowTerminalOption = "@krad_terminal"

// PaneShellOption is the tmux pane option in which krad-ade-agents shell writes the name tmux
// gives the shell it starts (#{pane_current_command} while the shell itself is in the
// foreground: "bash"), before it starts it. On an SSH host, where the app cannot see the host's
// process groups, another name in the pane's foreground is a job the shell runs.
const PaneShellOption = "@krad_shell"

// TerminalVars are what the terminals of one host are given, besides each one's own
// [VarTerminal]: where the bus is, the token or where to read it, and the app's folder first on
// PATH. The terminals of this computer and those of SSH hosts get them alike; they differ only in
// what is set: on an SSH host Token is zero, and the token stays in its file, out of every
// environment there.
type TerminalVars struct {
	// Endpoint is [VarEndpoint].
	Endpoint string
	// Token is [VarToken]; zero on SSH hosts.
	Token Token
	// TokenFile is [VarTokenFile]; "" for none.
	TokenFile string
	// BinDir is where krad and krad-ade-agents are: first on PATH (see [PathFirst]).
	BinDir string
	// Path is the rest of PATH.
	Path string
	// Askpass: git's prompts come to the app (GIT_ASKPASS is BinDir/krad-ade-askpass), unless
	// the user has an askpass of their own, which the app then leaves alone. SSHAskpass: ssh's
	// too (SSH_ASKPASS, with SSH_ASKPASS_REQUIRE=force), only when config.toml asks and the user
	// has no SSH_ASKPASS of their own.
	Askpass, SSHAskpass bool
}

// VarGitAskpass and VarSSHAskpass are the variables that send git's and ssh's prompts to
// krad-ade-askpass, and AskpassName its name in BinDir. VarSSHAskpassRequire is set to "force"
// beside VarSSHAskpass: OpenSSH uses its askpass only with a display (DISPLAY) unless told to,
// and a terminal of the app has a TTY and, on an SSH host, no display; "prefer" still asks on
// the TTY there.
const (
	VarGitAskpass        = "GIT_ASKPASS"
	VarSSHAskpass        = "SSH_ASKPASS"
	VarSSHAskpassRequire = "SSH_ASKPASS_REQUIRE"
	AskpassName          = "krad-ade-askpass"
)

// VarGit names the environment whose own git (a group's checkout the app makes, say) asks a
// prompt: krad-ade-askpass calls as the Git caller of that environment for terminal 0, the app
// itself, when it is set and VarTerminal is not. The app sets it only for the gits it runs
// itself ([TerminalVars.AppGitEnv]), never in a terminal.
const VarGit = "KRAD_ADE_GIT"

// VarAskpassKey is the askpass key: a random 128-bit secret the app gives one terminal it opens
// (in that window's environment alone, never the session's, a file or an argument), or the gits
// of one operation it runs itself (for as long as it runs), and that krad-ade-askpass sends with
// each prompt as [AskpassBody.Key]. A prompt that names a terminal, or the app itself, without the
// key the app gave it is refused: no other terminal can raise a prompt in its name.
const VarAskpassKey = "KRAD_ADE_ASKPASS_KEY"

// Env is terminal's variables as NAME=value, for its process's environment (tmux new-window
// -e): those of [TerminalVars.Session] that are set, and [VarTerminal]. It holds the token in
// the clear on this computer: it goes to the terminal, and nowhere else.
func (v TerminalVars) Env(terminal TerminalID) []string {
	env, _ := v.list(terminal.String())
	return env
}

// Session is what a tmux session holds for every window opened in it, windows a person opens by
// hand included: set, as NAME=value, are the variables the host's terminals get, but for
// [VarTerminal], which is each window's own; unset are the names the session must not hold (from
// an earlier run, or from the environment of the tmux server): VarTerminal, and VarToken on an SSH
// host.
func (v TerminalVars) Session() (set, unset []string) { return v.list("") }

// list is the one list of the variables: terminal "" leaves VarTerminal unset.
func (v TerminalVars) list(terminal string) (set, unset []string) {
	add := func(name, value string, ok bool) {
		if ok {
			set = append(set, name+"="+value)
		} else {
			unset = append(unset, name)
		}
	}
	add(VarEndpoint, v.Endpoint, true)
	add(VarToken, v.Token.Reveal(), !v.Token.IsZero())
	add(VarTokenFile, v.TokenFile, v.TokenFile != "")
	add(VarTerminal, terminal, terminal != "")
	if terminal == "" {
		// A window opened by hand works in no group: the session holds no group's variables.
		unset = append(unset, VarGroup, VarPort)
	}
	add("PATH", PathFirst(v.BinDir, v.Path), true)
	// Set, never unset: an askpass of the user's own stays.
	if v.Askpass && v.BinDir != "" {
		set = append(set, VarGitAskpass+"="+path.Join(v.BinDir, AskpassName))
	}
	if v.SSHAskpass && v.BinDir != "" {
		set = append(set, VarSSHAskpass+"="+path.Join(v.BinDir, AskpassName), VarSSHAskpassRequire+"=force")
	}
	return set, unset
}

// AppGitEnv is what a git the app runs itself in environment env gets, as NAME=value, so that
// its prompts (a credential a filter asks for while a group's checkout is made) reach the person
// as the Git caller of env: GIT_ASKPASS, and the variables krad-ade-askpass finds the bus with,
// naming no terminal but VarGit. The token goes as its file when there is one, not in the clear.
// Each variable is set, empty where it has no value, so that one the app's own process inherited
// (from a terminal of another app it was started in) is not taken instead. None when Askpass is
// off: the user's own askpass (core.askPass) then answers, or nothing does. key is the askpass
// key of the operation ([VarAskpassKey]): without the right one, the app refuses the prompt.
func (v TerminalVars) AppGitEnv(env string, key Token) []string {
	if !v.Askpass || v.BinDir == "" {
		return nil
	}
	token, file := v.Token.Reveal(), v.TokenFile
	if file != "" {
		token = ""
	}
	return []string{
		VarGitAskpass + "=" + path.Join(v.BinDir, AskpassName),
		VarEndpoint + "=" + v.Endpoint,
		VarToken + "=" + token,
		VarTokenFile + "=" + file,
		VarTerminal + "=",
		VarGit + "=" + env,
		VarAskpassKey + "=" + key.Reveal(),
	}
}

// PathFirst is the PATH list with dir first and nowhere else: how the app's folder, which
// holds krad and krad-ade-agents, comes first on every terminal's PATH, and on that of a shell
// krad-ade-agents starts. dir is also left out where it comes again under another spelling (a
// trailing slash), and so are empty entries, which a shell takes for the current folder. The
// separator is ':': the terminals run in tmux, on Unix. An empty dir adds nothing.
func PathFirst(dir, list string) string {
	var keep []string
	if dir != "" {
		keep = append(keep, dir)
	}
	for p := range strings.SplitSeq(list, ":") {
		if p != "" && (dir == "" || path.Clean(p) != path.Clean(dir)) {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, ":")
}

// GroupEnv is what a terminal of a group gets besides the host's variables, as NAME=value:
// [VarGroup] and [VarPort]; nothing for the main checkout (group "").
func GroupEnv(group string, port int) []string {
	if group == "" {
		return nil
	}
	env := []string{VarGroup + "=" + group}
	if port > 0 {
		env = append(env, VarPort+"="+strconv.Itoa(port))
	}
	return env
}
