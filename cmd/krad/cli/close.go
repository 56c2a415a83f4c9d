package cli

import "github.com/krad-ade/krad/api"

// closeCommand is `krad close T`: Close.
func closeCommand() *command {
	return &command{
		name:    "close",
		args:    "T",
		summary: "close one of this lead's workers",
		help: `
Closes terminal T, one of this lead's workers: its process ends and its terminal goes away.

T is a terminal of this terminal's own environment: its number, like 2, or main:2.`,
		run: func(x *invocation, args []string) error {
			t, b, err := x.targetOnBus(args)
			if err != nil {
				return err
			}
			return b.ok(x.ctx, api.NewRequest(api.Close, &api.CloseBody{Target: t}))
		},
	}
}

// closeSessionCommand is `krad close-session`: CloseSession.
func closeSessionCommand() *command {
	return &command{
		name:    "close-session",
		summary: "close this lead's session and all its workers",
		help: `
Closes every worker of the session this terminal leads. The lead itself stays open.`,
		run: func(x *invocation, args []string) error {
			b, err := x.busNoArgs(args)
			if err != nil {
				return err
			}
			return b.ok(x.ctx, api.NewRequest(api.CloseSession, nil))
		},
	}
}
