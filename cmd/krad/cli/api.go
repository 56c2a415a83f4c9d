package cli

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// apiCommand is `krad api`: Hello, in one line.
func apiCommand() *command {
	return &command{
		name:    "api",
		args:    "[--json]",
		summary: "say hello to the agents API and print its version",
		json:    `print {"api_version","build","pid","endpoint"}`,
		help: `
Says Hello to the agents API and prints one line: the API version, the app's build and process
id, the endpoint, and how krad found it.`,
		run: func(x *invocation, args []string) error {
			b, h, err := x.helloNoArgs(args)
			if err != nil {
				return err
			}
			if x.json {
				return writeJSON(x.stdout, struct {
					APIVersion int    `json:"api_version"`
					Build      string `json:"build"`
					PID        int    `json:"pid,omitempty"`
					Endpoint   string `json:"endpoint"`
				}{h.APIVersion, h.Build, h.PID, b.client.Endpoint})
			}
			pid := ""
			if h.PID != 0 {
				pid = fmt.Sprintf(" · pid %d", h.PID)
			}
			_, err = fmt.Fprintf(x.stdout, "agents API v%d · build %s%s · %s (found through %s)\n",
				h.APIVersion, termsafe.Escape(h.Build, 100), pid, b.client.Endpoint, termsafe.Escape(b.foundThrough(), maxLine))
			return err
		},
		subs: []*command{apiInfoCommand()},
	}
}

// apiInfoCommand is `krad api info`: where the API is, how krad found it, and whether api.json is
// live.
func apiInfoCommand() *command {
	var showToken bool
	return &command{
		name:    "info",
		args:    "[--show-token] [--json]",
		summary: "print where the agents API is and how krad found it",
		json:    `print {"endpoint","api_version","build","discovery_file","token"}`,
		help: `
Prints where the agents API is and how krad found it: the endpoint, the API version and the
app's build (from a Hello), the variable or api.json krad found it through, and who krad calls
as. When krad found it through api.json and nothing answers there, or another process does, the
file is stale and krad exits with 2.`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&showToken, "show-token", false, "also print the bus token")
		},
		run: func(x *invocation, args []string) error {
			b, h, err := x.helloNoArgs(args)
			if err != nil {
				return err
			}
			token := ""
			if showToken {
				token = b.client.Token.Reveal() // asked for by name
			}
			if x.json {
				return writeJSON(x.stdout, struct {
					Endpoint      string `json:"endpoint"`
					APIVersion    int    `json:"api_version"`
					Build         string `json:"build"`
					DiscoveryFile string `json:"discovery_file,omitempty"`
					Token         string `json:"token,omitempty"`
				}{b.client.Endpoint, h.APIVersion, h.Build, b.file, token})
			}
			rows := [][2]string{
				{"endpoint", b.client.Endpoint},
				{"api version", fmt.Sprint(h.APIVersion)},
				{"build", termsafe.Escape(h.Build, 100)},
				{"found through", termsafe.Escape(b.foundThrough(), maxLine)},
				{"caller", b.client.From.String()},
			}
			if showToken {
				rows = append(rows, [2]string{"token", token})
			}
			_, err = io.WriteString(x.stdout, formatRows(rows, ""))
			return err
		},
	}
}

// helloNoArgs says Hello to the bus for a command that takes no arguments: the bus, and its
// answer.
func (x *invocation) helloNoArgs(args []string) (*bus, api.HelloAnswer, error) {
	b, err := x.busNoArgs(args)
	if err != nil {
		return nil, api.HelloAnswer{}, err
	}
	h, err := b.hello(x.ctx)
	return b, h, err
}
