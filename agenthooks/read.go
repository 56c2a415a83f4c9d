package agenthooks

import (
	"encoding/json"
	"slices"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// MaxPayload is the most of an agent's JSON that Read needs: the fields it reads are in the
// small payloads (a notification, a session's start or end); a larger one (a tool's whole output,
// after PostToolUse) is read only for its event, which the command line names.
const MaxPayload = 64 << 10

// payload holds the fields of the agents' JSON that Read uses, whatever else they send.
type payload struct {
	HookEventName    string `json:"hook_event_name"`
	Source           string `json:"source"`            // SessionStart: startup, resume, clear, compact
	Reason           string `json:"reason"`            // SessionEnd: clear, resume, logout, prompt_input_exit, exit, other
	NotificationType string `json:"notification_type"` // Notification
	Message          string `json:"message"`           // Notification
	ToolName         string `json:"tool_name"`         // Codex's PermissionRequest
	Type             string `json:"type"`              // Codex's notify: agent-turn-complete
}

// Read is what the hook of kind for event tells of the agent, given the JSON the agent sent it
// (on stdin; Codex's notify, as its last argument): the report to make, and ok false when the
// event says nothing of the agent's state (a tool's output on Claude Code's PreCompact, a
// notification that needs no one, an event Read does not know). An empty event is the JSON's
// hook_event_name. Only the JSON's first MaxPayload bytes are read; JSON that cannot be read
// counts as {}, so an event that needs none of its fields is told all the same.
//
// The states, from each agent's documentation:
//
//   - working: a prompt was taken (Claude Code's and Codex's UserPromptSubmit, Gemini CLI's
//     BeforeAgent), a tool is about to run or has run (PreToolUse, PostToolUse; BeforeTool,
//     AfterTool): after a permission the person gave, the turn goes on.
//   - needs_input, with the agent's message: Claude Code's Notification of a permission asked,
//     of its prompt idle for a minute, of an MCP server's question; Gemini CLI's Notification of
//     a tool's permission; Codex's PermissionRequest.
//   - idle: the agent's turn ended (Stop; AfterAgent), or a session began, the agent ready for a
//     prompt (SessionStart of startup, resume or /clear; not of a compaction, which can come
//     mid-turn).
//   - idle as a lifecycle report, the agent handing the terminal back: the end of a session
//     (SessionEnd, but for a /clear or a /resume, which go on in a new session), and Codex's
//     notify at a turn's end (agent-turn-complete), all Codex tells without hooks, after which
//     its screen shows its work again.
func Read(kind, event string, js []byte) (api.ReportBody, bool) {
	var p payload
	if len(js) > MaxPayload {
		js = js[:MaxPayload]
	}
	if json.Unmarshal(js, &p) != nil {
		p = payload{}
	}
	if event == "" {
		event = p.HookEventName
	}
	working := api.ReportBody{State: api.StateWorking}
	idle := api.ReportBody{State: api.StateIdle}
	handBack := api.ReportBody{State: api.StateIdle, Lifecycle: true}
	needs := func(message string) (api.ReportBody, bool) {
		return api.ReportBody{State: api.StateNeedsInput, Message: api.CleanMessage(message)}, true
	}
	started := func() (api.ReportBody, bool) {
		// A compaction's new start comes mid-turn: the turn goes on.
		return idle, p.Source != "compact"
	}
	ended := func() (api.ReportBody, bool) {
		// After /clear or /resume a new session goes on in the same agent.
		return handBack, p.Reason != "clear" && p.Reason != "resume"
	}
	switch kind {
	case Claude:
		switch event {
		case "SessionStart":
			return started()
		case "UserPromptSubmit", "PreToolUse", "PostToolUse":
			return working, true
		case "Notification":
			// A Claude Code from before notification_type sent these two kinds only.
			if p.NotificationType == "" || slices.Contains(claudeNeeds, p.NotificationType) {
				return needs(p.Message)
			}
		case "Stop":
			return idle, true
		case "SessionEnd":
			return ended()
		}
	case Gemini:
		switch event {
		case "SessionStart":
			return started()
		case "BeforeAgent", "BeforeTool", "AfterTool":
			return working, true
		case "Notification":
			if p.NotificationType == "" || p.NotificationType == "ToolPermission" {
				return needs(p.Message)
			}
		case "AfterAgent":
			return idle, true
		case "SessionEnd":
			return ended()
		}
	case Codex:
		switch event {
		case NotifyEvent:
			// "agent-turn-complete" is the one type Codex sends; another would be new.
			return handBack, p.Type == "agent-turn-complete"
		case "SessionStart":
			return started()
		case "UserPromptSubmit", "PreToolUse", "PostToolUse":
			return working, true
		case "PermissionRequest":
			what := "Codex needs your approval"
			if tool := api.CleanMessage(p.ToolName); tool != "" {
				what += " to use " + termsafe.Cut(tool, 80)
			}
			return needs(what)
		case "Stop":
			return idle, true
		}
	}
	return api.ReportBody{}, false
}
