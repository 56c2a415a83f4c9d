// Package ui is krad-ade's own face: a full-screen terminal UI, built on Bubble Tea, for the person
// who runs the agents. It shows the environments with their connection states, the agents live
// with their states, the app's log, and a group's changes as a coloured diff; it attaches the
// person to an agent's tmux window, names a new lead, closes a terminal, and toggles discovery.
//
// It holds no app logic. What it shows comes from the app's own model through an in-process
// subscription (app.App.Subscribe: the events the bus's SubscribeAgents streams, published by the
// same call), never by polling; what it does is a call the app or the config already has
// (OpenLead, CloseTerminal, AttachCommand, Changes, config.SetDiscovery). A lead named here is
// opened exactly as a configured one.
//
// # What it shows and what it does not
//
// Titles, messages, log lines and patches come from outside (agents name their own titles and
// write the files): every one is escaped (internal/termsafe) before it reaches the screen, so
// nothing in them can move the cursor or change the terminal. The UI never shows a token, nor a
// terminal's screen: attaching hands the terminal to tmux itself.
package ui
