package access

import "github.com/krad-ade/krad/api"

// AgentFor is agent ag as caller from may see it, in an answer or an event made for that caller
// (List, ListAll, SubscribeAgents, and any other request that answers with agents). Ids, titles
// and states are for every caller; ag.Message, which the agent wrote (a permission prompt may
// quote the tool call it wants to run), is content, which the spec's security model keeps to a
// terminal caller of the agent's own environment, as it keeps a screen (Read): a Client, or a
// terminal of another environment, gets the agent without it. It is the one place that decides
// it; the app's own face, which is no caller of the bus, sees every agent whole.
func AgentFor(from api.Caller, ag api.Agent) api.Agent {
	if !seesContents(from, ag.Environment) {
		ag.Message = ""
	}
	return ag
}

// seesContents says whether caller from may read what the terminals of environment env hold or
// wrote (the spec's "reading a screen needs a terminal caller of that environment"): a terminal,
// or a lead calling as its terminal, of env.
func seesContents(from api.Caller, env string) bool {
	return (from.Kind == api.CallerTerminal || from.Kind == api.CallerLead) && from.Terminal.Environment == env
}
