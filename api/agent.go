package api

import "time"

// Roles of an agent.
const (
	RoleShell  = "shell"
	RoleLead   = "lead"
	RoleWorker = "worker"
)

// States of an agent. Idle, NeedsInput, Done, Failed and Closed are settled: a Wait returns on them.
const (
	StateStarting   = "starting"
	StateWorking    = "working"
	StateIdle       = "idle"
	StateNeedsInput = "needs_input"
	StateDone       = "done"
	StateFailed     = "failed"
	StateClosed     = "closed"
	// StateUnreachable is shown while the agent's environment is down (its SSH connection lost,
	// its tmux not answering): the agent may be working or idle, and the app cannot tell. It is
	// neither settled nor ended: a Wait goes on waiting, and the agent's own state comes back
	// with its environment. An agent whose process had ended keeps done or failed, which stay
	// true. Agents never report it themselves.
	StateUnreachable = "unreachable"
)

// Settled reports whether state is one a Wait returns on.
func Settled(state string) bool {
	switch state {
	case StateIdle, StateNeedsInput, StateDone, StateFailed, StateClosed:
		return true
	}
	return false
}

// Ended reports whether state is final: the agent's process is gone.
func Ended(state string) bool {
	return state == StateDone || state == StateFailed || state == StateClosed
}

// Agent is one terminal as the bus shows it: ids, titles and states only, never screen contents
// or prompts.
type Agent struct {
	Environment string    `json:"environment"`
	Terminal    int       `json:"terminal"`
	Title       string    `json:"title"`
	Role        string    `json:"role"`
	State       string    `json:"state"`
	Session     string    `json:"session"`
	Group       string    `json:"group"`
	ExitCode    *int      `json:"exit_code"`
	Since       time.Time `json:"since"`
}

// ID is the agent's terminal, "E:N".
func (a Agent) ID() TerminalID { return TerminalID{Environment: a.Environment, Terminal: a.Terminal} }

// Kinds of AgentEvent.
const (
	AgentAdded   = "added"
	AgentChanged = "changed"
	AgentRemoved = "removed"
)

// AgentEvent is one change of one agent, streamed by SubscribeAgents as {"AgentEvent":…}.
type AgentEvent struct {
	Kind  string `json:"kind"`
	Agent Agent  `json:"agent"`
}

// Kinds of AppEvent.
const (
	EnvironmentUp   = "environment_up"
	EnvironmentDown = "environment_down"
	// EnvironmentAdded and EnvironmentRemoved say that config.toml gained or lost an SSH
	// environment while the app runs. A removed environment's terminals run on, on its host; its
	// agents were sent as removed before the event.
	EnvironmentAdded   = "environment_added"
	EnvironmentRemoved = "environment_removed"
	// EnvironmentState says how the way to an SSH environment is: Message is "connecting",
	// "connected", "retrying in 8s: <last error>" or "failed: <why>".
	EnvironmentState = "environment_state"
	// TerminalLimit says that an environment has as many terminals as the app follows: windows
	// opened beyond them are left alone, unnumbered, and Spawn is refused until some close.
	TerminalLimit = "terminal_limit"
	// PromptNotTyped says that a Spawn's prompt could not be typed into its worker (its
	// environment went down and did not come back in time, say): Message names the terminal,
	// which runs without its task.
	PromptNotTyped = "prompt_not_typed"
	// GroupRetired says that a group whose last terminal closed retired: Message says what was
	// removed (its checkout) and what was kept (its snapshot of uncommitted work, its branch).
	GroupRetired = "group_retired"
	// GroupNotRetired says that a group whose last terminal closed could not retire, and why:
	// its checkout stays, and Message names its folder.
	GroupNotRetired = "group_not_retired"
	// VariantPicked says that a lead picked a variant: Message says which, how, the commit made,
	// the others' terminals it closed, and what each other variant's retiring kept (its branch,
	// its snapshot ref), in names and ids only.
	VariantPicked = "variant_picked"
)

// AppEvent is a change of the app itself, streamed by SubscribeAgents as {"AppEvent":…}: an
// environment came up or went down, or reached its limit of terminals, or a worker's prompt could
// not be typed. Message says why, for people.
type AppEvent struct {
	Kind        string `json:"kind"`
	Environment string `json:"environment"`
	Message     string `json:"message,omitempty"`
}

// Screen is the answer to Read: the text of a terminal's screen (or its last lines).
type Screen struct {
	Terminal int    `json:"terminal"`
	Text     string `json:"text"`
}
