// Package app is krad-ade's model of its terminals: one environment per tmux session (this
// computer's, and one per SSH host), one terminal per tmux window, driven in tmux's control mode,
// and the handlers of the requests the bus (package local) lets through. It owns what the bus
// shows of an agent: its number, role, session and state.
//
// # Files
//
// env.go is an environment's life: attach, adopt the windows there are, open terminals, follow
// tmux's notifications, go down and come back. panes.go is the tmux plumbing it uses: the formats
// the app asks tmux for, the command lines it builds, and the parsers of what comes back, each
// written once. readback.go bounds every value read back from tmux, which on an SSH host is
// outside input. windows.go numbers the windows a person opens and forgets those that close;
// terminal.go is one terminal's state machine; look.go and echo.go tell a reaction to a Send;
// prompt.go types a Spawn's prompt.
//
// # Locks
//
// App.mu is the one mutex of the model. It guards every environment's fields that change (up,
// client, terminals and their indexes by pane and window, next, …), every terminal's fields, the
// subscribers (hub) and changed, the channel that is closed and replaced on every change so that
// waiters wake, and App.envs, which AddEnvironment and RemoveEnvironment change while the app runs:
// an environment found there stays valid to use after the lock is let go (a removed one is detached
// and answers as down), but is looked up again under the lock for each decision. App.mu
// is held only to read or change the model, never across a tmux command or any other wait: the
// goroutine that reads an environment's tmux takes it for the notifications it applies (onNote),
// so a holder that waited on tmux would wait on itself.
//
// environment.createMu serialises what adds terminals to an environment or moves its windows:
// opening a terminal (open), adopting the windows at attach (adopt), numbering windows a person
// opened (windowsAdded, numberAll). It is taken first, before App.mu, never while App.mu is held.
// Its holders may therefore trust that the room for terminals they saw stays, and that no other
// holder moves the windows they listed (sessionWindows).
//
// terminal.sendMu makes Sends to one terminal take turns, so that each one's echo is its own. It
// is held for a whole Send (and, for a worker spawned with a prompt, from the Spawn until the
// prompt is typed), without App.mu, and taken before App.mu, never under it; the one exception is
// open, which takes a new terminal's sendMu under createMu and App.mu before anyone can know the
// terminal, where it cannot block.
//
// The other mutexes are leaves, taken with or without App.mu, and nothing is taken under them:
// windowWork.mu (the work notifications leave for follow) and warnLimiter.mu (the rate of an
// environment's warnings). The hub sends to subscribers under App.mu: a send never blocks
// (package local drops a subscriber whose buffer is full).
//
// Names keep these promises. A function or method whose name ends in Locked is called with App.mu
// held, and never takes App.mu (what it starts on a goroutine or a timer takes it there). One whose
// name ends in Creating is called with environment.createMu held and App.mu not held, which it
// may take. A method of App or environment with neither suffix needs no lock from its caller:
// most take App.mu themselves, so are never called with it held (a few take no lock, such as
// warn, and may be). Those that need terminal.sendMu say so (typeText, typePrompt). The methods of
// terminal and pendingSend are the model itself and carry no suffix: they touch only their own
// fields, and are called with App.mu held (or, in tests, on a terminal no one else knows).
//
// # Agent states
//
// A terminal's state (package api lists them) comes from what the app hears:
//
//   - starting: from the moment the terminal is registered, before its window exists, until it
//     prints, reports, or stays quiet for Config.Quiet.
//   - working and idle, for an agent that never reported: working while it prints (tmux's %output),
//     idle once it printed nothing for Config.Quiet (armQuietLocked's timer), unless a job runs
//     in its shell's foreground (foregroundJob: another process group on this computer, another
//     command than the shell on a host), which is working until it gives the terminal back; for
//     an agent's window, once tmux says its process has not ended.
//   - any state an agent reports itself (Report, from its hooks, which krad-ade-agents hook
//     makes of what an agent CLI sends: package agenthooks): believed from then on, with the
//     agent's message, and its output no longer moves it. krad-ade-agents run's reports of its
//     command's start and end (Lifecycle) are not the agent's own word: a start is working and
//     leaves the output to decide from there, an end is done or failed with the command's exit
//     code. An agent's window runs its command through run --exec, which reports the start and
//     becomes the command: the window's process is the agent's, and run reports an end only for
//     a command that could not start (127, 126). A lifecycle idle is an agent at rest handing
//     the terminal back (a turn's end Codex's notify tells, a session's end): idle, as it said,
//     and its output decides from there.
//   - Each state says where it came from (terminal.from, the agent's state_from): reported for
//     the agent's own word, the screen for the rest.
//   - done (exit code 0) or failed (any other; 128 + a signal; -1 when tmux never learns it) once
//     the window's process ended: told by tmux's pane-died hook (endedHookCommand: krad-ade-agents
//     ended reports it as a Lifecycle end), by the krad-dead subscription, by asking tmux after
//     open or as an agent's quiet spell ends (armQuietLocked: an ended agent is never idle), or
//     by list-windows at attach. A pane dead before tmux collected its process is asked about
//     again (collect) until tmux knows its code, or gives up with -1: an end is never reported
//     before that.
//   - closed once the window is gone; the terminal is then removed.
//   - unreachable is shown, not kept: while the environment is down, an agent that had not ended
//     is shown unreachable since it went down, and gets the state it had back when the
//     environment returns (terminal.agent).
//
// Settled states (a Wait returns on them) are idle, needs_input, done, failed and closed; done,
// failed and closed are ended.
//
// # A Send and the Wait after it
//
// A Send (typeText, under terminal.sendMu) looks at the terminal first (glance: its screen and its
// foreground process group), records a pendingSend as terminal.send, types the text, waits
// Config.PasteDelay, looks at the screen again and presses Enter. From the record on, the terminal
// is not settled (terminal.settled) until it reacts: its screen shows anything but what it showed
// before and the echo of the text (terminal.looked, echoOnly), or it reports a state itself, or its
// process ends. A look follows the Send's last key, and the terminal's output brings more, one at a
// time (lookLocked); an agent that reports its state reacts by reporting, and its output brings no
// look. A foreground job the text started (another process group; on an SSH host, another command
// name) is the agent at work however long it prints nothing.
//
// A terminal that shows nothing but the echo, reports nothing and runs no such job for
// Config.Reaction (10 s by default) after the Send's last key is taken as it is: the Wait looks
// once the window has passed (while the terminal's state is settled: a working one is waited out
// first), and again restConfirm later; once the looks have seen no job for restConfirm the Send is
// given up (pendingSend.givenUp) and the terminal's state answers the Wait (waitFor with looks,
// terminal.lookIn). A Spawn's prompt is typed as a Send is; until it is typed, terminal.prompt
// holds every Wait on the worker.
package app
