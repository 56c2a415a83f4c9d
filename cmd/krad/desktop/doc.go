// Package desktop is what the build of krad for a person's computer adds to package cli, beside
// the static krad of SSH hosts: the bus found through api.json ([Discover]), and krad mcp's server
// run by krad-ade's program ([ExecMCPServer]), so that krad itself links no MCP SDK.
//
// krad runs often and briefly: every command, every agent's hook (as krad-ade-agents) and every
// git prompt (as krad-ade-askpass) is one start of it. The MCP SDK, with net/http under it, made
// each start 1.5 to 2 ms slower on the project's machine (BENCHMARKS.md), for the one command
// that serves MCP, once per agent's session. krad-ade links it already (it runs the hosts' krad
// mcp, package mcprelay): krad mcp execs it, in its place, with [ServeMCPArg] and krad's own
// arguments; krad-ade then runs package cli's krad mcp with package mcpserve's server.
package desktop
