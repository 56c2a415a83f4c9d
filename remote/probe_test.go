package remote

import (
	"errors"
	"strings"
	"testing"
)

func TestParseUname(t *testing.T) {
	tests := []struct {
		in   string
		want Platform
		err  string // "" for none
	}{
		{"Linux x86_64", Platform{"linux", "amd64"}, ""},
		{"Linux aarch64", Platform{"linux", "arm64"}, ""},
		{"Linux arm64", Platform{"linux", "arm64"}, ""},
		{"Linux armv7l", Platform{}, "the host is Linux on armv7l, and krad-ade installs krad on linux/amd64 and linux/arm64 hosts only"},
		{"Linux i686", Platform{}, "the host is Linux on i686, and krad-ade installs krad on linux/amd64 and linux/arm64 hosts only"},
		{"Darwin arm64", Platform{}, "the host is Darwin on arm64, and krad-ade installs krad on linux/amd64 and linux/arm64 hosts only"},
		{"FreeBSD amd64", Platform{}, "the host is FreeBSD on amd64, and krad-ade installs krad on linux/amd64 and linux/arm64 hosts only"},
		{"Linux\x1b[2J x86_64", Platform{}, `the host is Linux\x1b[2J on x86_64, and krad-ade installs krad on linux/amd64 and linux/arm64 hosts only`},
		{"", Platform{}, `probe the host's platform: uname -s -m printed "", want a system and a processor`},
		{"Linux", Platform{}, `probe the host's platform: uname -s -m printed "Linux", want a system and a processor`},
		{"Linux x86_64 extra", Platform{}, `probe the host's platform: uname -s -m printed "Linux x86_64 extra", want a system and a processor`},
	}
	for _, tt := range tests {
		got, err := parseUname(tt.in)
		if tt.err == "" {
			if err != nil || got != tt.want {
				t.Errorf("parseUname(%q): got %v, %v; want %v", tt.in, got, err, tt.want)
			}
			continue
		}
		if err == nil || err.Error() != tt.err {
			t.Errorf("parseUname(%q): got %v, %v; want error %q", tt.in, got, err, tt.err)
		}
		var ue *UnsupportedError
		if want := strings.HasPrefix(tt.err, "the host is"); errors.As(err, &ue) != want {
			t.Errorf("parseUname(%q): got %T; want an *UnsupportedError: %v", tt.in, err, want)
		}
	}
}

func TestPlatformNames(t *testing.T) {
	p := Platform{"linux", "arm64"}
	if p.String() != "linux/arm64" || p.StaticName() != "krad-linux-arm64" {
		t.Errorf("got %q and %q", p.String(), p.StaticName())
	}
}
