// Package apitest holds what tests of several packages need of the Agents API: one valid request
// of every name, so that a test can ask "may this caller make every request?" without a list of
// its own that would fall behind the API's.
package apitest

import (
	"fmt"

	"github.com/krad-ade/krad/api"
)

// Requests is one valid request of every name of the API, in the order of api.Names; those that
// name a terminal name target. None of them would harm a real app that obeyed it: Spawn and
// RunVariants start `true`, Send types a comment, CreateWorktree makes a group apitest, PickVariant
// picks with how=branch (which touches nothing), Close and the others name target.
func Requests(target api.Target) []api.Request {
	var reqs []api.Request
	one := uint32(1)
	lines := 5
	for _, name := range api.Names {
		var body any
		switch name {
		case api.Hello, api.List, api.ListAll, api.SubscribeAgents, api.CloseSession, api.Groups:
		case api.Check:
			body = &api.CheckBody{Target: target}
		case api.Wait:
			body = &api.WaitBody{Target: target, TimeoutSecs: &one}
		case api.Read:
			body = &api.ReadBody{Target: target, Lines: &lines}
		case api.Send:
			body = &api.SendBody{Target: target, Text: "# from apitest"}
		case api.Spawn:
			body = &api.SpawnBody{Title: "apitest", Command: []string{"true"}}
		case api.Close:
			body = &api.CloseBody{Target: target}
		case api.Report:
			body = &api.ReportBody{State: api.StateIdle}
		case api.CreateWorktree:
			body = &api.CreateWorktreeBody{Name: "apitest"}
		case api.Changes:
			body = &api.ChangesBody{Target: &target, Stat: true}
		case api.RunVariants:
			body = &api.RunVariantsBody{Title: "apitest", Agents: []api.VariantAgent{{Command: []string{"true"}, Count: 1}}}
		case api.RetireGroup:
			body = &api.RetireGroupBody{Group: "apitest"}
		case api.SyncGroup:
			body = &api.SyncGroupBody{Group: "apitest"}
		case api.PushGroup:
			body = &api.PushGroupBody{Group: "apitest"}
		case api.PickVariant:
			body = &api.PickVariantBody{Group: "apitest", How: api.PickBranch}
		case api.ExtensionTool:
			body = &api.ExtensionToolBody{Extension: "apitest"}
		case api.Code:
			body = &api.CodeBody{Path: "/nonexistent/apitest.go"}
		case api.Askpass:
			body = &api.AskpassBody{Prompt: "Password: ", Kind: api.AskPassword}
		case api.MCP:
			// A session no app gave: not_found where it may be made, and nothing started.
			body = &api.MCPBody{Session: "00000000000000000000000000000000"}
		default:
			panic(fmt.Sprintf("apitest: no sample of request %s: add one", name))
		}
		reqs = append(reqs, api.NewRequest(name, body))
	}
	return reqs
}
