package cli

import (
	"fmt"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/version"
	"github.com/spf13/pflag"
)

// versionCommand is `krad version`.
func versionCommand() *command {
	var asJSON bool
	return &command{
		name:    "version",
		args:    "[--json]",
		summary: "print krad's version and the API version it speaks",
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, `print {"version","api_version","variables_only"}`)
		},
		run: func(x *invocation, args []string) error {
			if err := x.noArgs(args); err != nil {
				return err
			}
			v := x.version()
			variablesOnly := x.opts.Discover == nil
			if asJSON {
				return writeJSON(x.stdout, struct {
					Version       string `json:"version"`
					APIVersion    int    `json:"api_version"`
					VariablesOnly bool   `json:"variables_only"`
				}{v, api.Version, variablesOnly})
			}
			build := ""
			if variablesOnly {
				build = " · static build: finds the API through the KRAD_ADE_* variables only"
			}
			_, err := fmt.Fprintf(x.stdout, "krad %s · agents API v%d%s\n", v, api.Version, build)
			return err
		},
	}
}

// version is krad's version: the one the main gave, else the build of every krad program.
func (x *invocation) version() string {
	if x.opts.Version != "" {
		return x.opts.Version
	}
	return version.Build
}
