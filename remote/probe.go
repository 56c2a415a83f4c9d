package remote

import (
	"context"
	"fmt"
	"strings"

	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/remote/shell"
)

// Platform is a host's system and processor, named as GOOS and GOARCH name them.
type Platform struct {
	OS   string // linux
	Arch string // amd64 or arm64
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// StaticName is the file name of the static krad built for p, as it sits in the app's folder:
// krad-linux-amd64.
func (p Platform) StaticName() string { return "krad-" + p.OS + "-" + p.Arch }

// Platforms are those krad-ade ships a static krad for.
var Platforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}}

// UnsupportedError says that a host's platform is not one of [Platforms].
type UnsupportedError struct {
	System  string // uname -s, like Darwin
	Machine string // uname -m, like armv7l
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("the host is %s on %s, and krad-ade installs krad on linux/amd64 and linux/arm64 hosts only",
		termsafe.Escape(e.System, 40), termsafe.Escape(e.Machine, 40))
}

var probeScript = shell.Script{
	Name: "PROBE",
	Body: `
u=$(uname -s -m) || krad_fail "run uname -s -m";
krad_say ok "$u";
`,
}

// Probe asks the host for its platform with `uname -s -m`. A platform krad-ade has no static krad
// for is an *UnsupportedError; output of the host's shell around the command's is ignored, and a
// missing answer is a *shell.NoiseError that quotes what came instead.
func Probe(ctx context.Context, h Host) (Platform, error) {
	out, err := h.Run(ctx, probeScript.Command(), nil)
	return ReadProbe(probeScript.Result(out, err))
}

// ProbeStep is Probe's command as a step of a [shell.Batch]; [ReadProbe] reads its result.
func ProbeStep() shell.Step { return shell.Step{Script: probeScript} }

// ReadProbe reads the result of [ProbeStep] (from [shell.Batch.Result]) as Probe does.
func ReadProbe(lines []string, err error) (Platform, error) {
	if err != nil {
		return Platform{}, fmt.Errorf("probe the host's platform: %w", err)
	}
	if len(lines) != 1 {
		return Platform{}, fmt.Errorf("probe the host's platform: uname -s -m printed %d lines, want 1", len(lines))
	}
	return parseUname(lines[0])
}

// parseUname reads the output of uname -s -m, like "Linux x86_64".
func parseUname(s string) (Platform, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return Platform{}, fmt.Errorf("probe the host's platform: uname -s -m printed %q, want a system and a processor", termsafe.Shorten(s, 100))
	}
	p := Platform{OS: strings.ToLower(f[0])}
	switch f[1] {
	case "x86_64", "amd64":
		p.Arch = "amd64"
	case "aarch64", "arm64":
		p.Arch = "arm64"
	}
	for _, q := range Platforms {
		if p == q {
			return p, nil
		}
	}
	return Platform{}, &UnsupportedError{System: f[0], Machine: f[1]}
}
