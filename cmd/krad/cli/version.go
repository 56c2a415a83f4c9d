package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/version"
	"github.com/spf13/pflag"
)

// versionCommand is `krad version`.
func versionCommand() *command {
	var withSum bool
	return &command{
		name:    "version",
		args:    "[--json]",
		summary: "print krad's version and the API version it speaks",
		json:    `print {"version","api_version","variables_only"}`,
		flags: func(fs *pflag.FlagSet) {
			// For krad-ade's install on SSH hosts (package remote): the trial run of a copy says
			// its version and the SHA-256 of the very file that runs, in one process.
			fs.BoolVar(&withSum, "sha256", false, `with --json: add "sha256", this executable's SHA-256`)
			_ = fs.MarkHidden("sha256")
		},
		run: func(x *invocation, args []string) error {
			if err := x.noArgs(args); err != nil {
				return err
			}
			if withSum && !x.json {
				return x.usageError("--sha256 goes with --json")
			}
			v := x.version()
			variablesOnly := x.opts.Discover == nil
			if x.json {
				out := struct {
					Version       string `json:"version"`
					APIVersion    int    `json:"api_version"`
					VariablesOnly bool   `json:"variables_only"`
					SHA256        string `json:"sha256,omitempty"`
				}{Version: v, APIVersion: api.Version, VariablesOnly: variablesOnly}
				if withSum {
					sum, err := executableSHA256()
					if err != nil {
						return fmt.Errorf("hash this executable: %w", err)
					}
					out.SHA256 = sum
				}
				return writeJSON(x.stdout, out)
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

// executableSHA256 is the lowercase hex SHA-256 of the file this process runs: on Linux the very
// file the kernel executed (/proc/self/exe, whatever its name now), elsewhere the one
// os.Executable names.
func executableSHA256() (string, error) {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		path, perr := os.Executable()
		if perr != nil {
			return "", perr
		}
		if f, err = os.Open(path); err != nil {
			return "", err
		}
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// version is krad's version: the one the main gave, else the build of every krad program.
func (x *invocation) version() string {
	if x.opts.Version != "" {
		return x.opts.Version
	}
	return version.Build
}
