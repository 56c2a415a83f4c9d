package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/krad-ade/krad/api"
)

// targetForms is what a target looks like, for errors and help.
const targetForms = "a target is a terminal number, like 2, or environment:number, like main:2"

// parseTarget reads a target: "N", a terminal of the caller's own environment, or "E:N", accepted
// only when E is that environment. self is KRAD_ADE_TERMINAL, the caller's own terminal ("" when
// krad runs outside the app's terminals). On the wire a target is the number alone: the app
// resolves it in the caller's environment, so naming another environment cannot work, and saying
// so here beats a not_found from the app about the wrong terminal.
func parseTarget(s, self string) (api.Target, error) {
	env, num, hasEnv := "", s, false
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		env, num, hasEnv = s[:i], s[i+1:], true
	}
	n, err := terminalNumber(num)
	if err != nil {
		return 0, fmt.Errorf("target %s: %w", quote(s), err)
	}
	if !hasEnv {
		return n, nil
	}
	id, err := api.ParseTerminalID(self)
	if err != nil {
		return 0, &problem{
			err: fmt.Errorf("target %s names environment %s, but targets are terminals of the caller's own environment, and krad is not in one of krad-ade's terminals (KRAD_ADE_TERMINAL is not set)",
				quote(s), quote(env)),
			kind: errUsage,
			hint: "run krad in a terminal of that environment, and give the number alone, like " + strconv.Itoa(int(n)),
		}
	}
	if env != id.Environment {
		return 0, &problem{
			err: fmt.Errorf("target %s names environment %s, but targets are terminals of the caller's own environment, %s",
				quote(s), quote(env), quote(id.Environment)),
			kind: errUsage,
			hint: "to reach a terminal of " + quote(env) + ", run krad in one of its terminals",
		}
	}
	return n, nil
}

// terminalNumber reads a terminal number: decimal digits only, 1 or more.
func terminalNumber(s string) (api.Target, error) {
	if s == "" {
		return 0, errors.New(targetForms)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New(targetForms)
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, errors.New("the terminal number is too large")
	}
	if n < 1 {
		return 0, errors.New("terminal numbers start at 1")
	}
	return api.Target(n), nil
}

// target reads the target argument of a command, with a usage error that says what a target is.
func (x *invocation) target(s string) (api.Target, error) {
	n, err := parseTarget(s, x.env(varTerminal))
	var p *problem
	switch {
	case err == nil:
		return n, nil
	case errors.As(err, &p):
		return 0, err
	}
	return 0, x.usageError("%v", err)
}

// targetOnBus is oneTarget and then the bus to ask about it, for a command of one target.
func (x *invocation) targetOnBus(args []string) (api.Target, *bus, error) {
	t, err := x.oneTarget(args)
	if err != nil {
		return 0, nil, err
	}
	b, err := x.bus()
	return t, b, err
}

// oneTarget reads the one argument of a command that takes a target.
func (x *invocation) oneTarget(args []string) (api.Target, error) {
	switch len(args) {
	case 0:
		return 0, x.usageError("%s needs a target: %s", x.path, targetForms)
	case 1:
		return x.target(args[0])
	}
	return 0, x.usageError("%s takes one target, and %s is one too many", x.path, quote(args[1]))
}
