package api

import "time"

// Role is an agent's role, on the wire its name as a JSON string: a plain terminal (a shell), a
// session's lead, or one of a lead's workers. It is what the app lists, not a caller's rights:
// those are package access's, whose TerminalRole turns a terminal's role into them.
type Role string

// Roles of an agent.
const (
	RoleShell  Role = "shell"
	RoleLead   Role = "lead"
	RoleWorker Role = "worker"
)

// State is an agent's state, on the wire its name as a JSON string.
type State string

// States of an agent. Idle, NeedsInput, Done, Failed and Closed are settled: a Wait returns on them.
const (
	StateStarting   State = "starting"
	StateWorking    State = "working"
	StateIdle       State = "idle"
	StateNeedsInput State = "needs_input"
	StateDone       State = "done"
	StateFailed     State = "failed"
	StateClosed     State = "closed"
	// StateUnreachable is shown while the agent's environment is down (its SSH connection lost,
	// its tmux not answering): the agent may be working or idle, and the app cannot tell. It is
	// neither settled nor ended: a Wait goes on waiting, and the agent's own state comes back
	// with its environment. An agent whose process had ended keeps done or failed, which stay
	// true. Agents never report it themselves.
	StateUnreachable State = "unreachable"
)

// Reportable are the states an agent may report of itself (Report), in the order people read
// them.
var Reportable = []State{StateWorking, StateIdle, StateNeedsInput, StateDone, StateFailed}

// Settled reports whether state is one a Wait returns on.
func Settled(state State) bool {
	switch state {
	case StateIdle, StateNeedsInput, StateDone, StateFailed, StateClosed:
		return true
	}
	return false
}

// Ended reports whether state is final: the agent's process is gone.
func Ended(state State) bool {
	return state == StateDone || state == StateFailed || state == StateClosed
}

// Where an agent's state came from (Agent.StateFrom).
const (
	// StateFromReported: the agent said so itself (krad report, the hooks of its CLI).
	StateFromReported = "reported"
	// StateFromScreen: the app's own reading of the terminal: its output and quiet spells, the
	// job in its shell's foreground, its process's start and end.
	StateFromScreen = "screen"
)

// Agent is one terminal as the bus shows it: ids, titles and states only, and what the agent said
// of its own state; never screen contents or prompts.
type Agent struct {
	Environment string    `json:"environment"`
	Terminal    int       `json:"terminal"`
	Title       string    `json:"title"`
	Role        Role      `json:"role"`
	State       State     `json:"state"`
	Session     string    `json:"session"`
	Group       string    `json:"group"`
	ExitCode    *int      `json:"exit_code"`
	Since       time.Time `json:"since"`
	// StateFrom says where State came from: StateFromReported or StateFromScreen. krad's
	// addition to the spec's agent.
	StateFrom string `json:"state_from"`
	// Message is what the agent said with the state it reported (krad report --message, or its
	// CLI's notification: "Claude needs your permission to use Bash"), one line of at most
	// MaxReportMessage bytes; "" when it said nothing, or its state came from the screen. It is
	// the agent's own words about itself, not its screen; but words that may quote what it asks
	// to run, so the bus gives them only to a terminal of the agent's environment
	// (access.AgentFor). krad's addition too.
	Message string `json:"message,omitempty"`
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
	// GroupSetup says how a group's setup goes, as the terminal that runs it (or waits for it)
	// tells: setting up, set up, or failed, with how (never its output, which is the terminal's
	// contents: krad groups shows its end).
	GroupSetup = "group_setup"
	// VariantPicked says that a lead picked a variant: Message says which, how, the commit made,
	// the others' terminals it closed, and what each other variant's retiring kept (its branch,
	// its snapshot ref), in names and ids only.
	VariantPicked = "variant_picked"
	// VariantsSettled says that every worker of a variant set the app started in this run has
	// settled (as a Wait on each would return: idle, needs_input, done, failed, closed) after
	// its task: Message names the set and each worker's state, in ids and states only. krad's
	// addition.
	VariantsSettled = "variants_settled"
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
