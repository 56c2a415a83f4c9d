package remote_test

import (
	"context"
	"fmt"
	"log"
	"path/filepath"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/version"
	"github.com/krad-ade/krad/remote"
)

// Preparing a host: its platform, the static krad for it, and a terminal's variables.
func Example() {
	var client *ssh.Client // connected by the forwarding manager
	appDir := "/opt/krad-ade"
	ctx := context.Background()

	h := remote.SSH(client)
	p, err := remote.Probe(ctx, h)
	if err != nil {
		log.Fatal(err) // an *UnsupportedError for a platform without a static krad
	}
	b, err := remote.ReadBinary(filepath.Join(appDir, p.StaticName()), p, version.Build)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := remote.Install(ctx, h, b) // ~/.krad-ade/bin/<version>, copied once per version
	if err != nil {
		log.Fatal(err) // remote.ErrNoexec, a *remote.CorruptError, a *shell.RefusedError, …
	}
	env := api.TerminalVars{
		Endpoint:  "127.0.0.1:41877",                   // the reverse forward on the host
		TokenFile: "/home/me/.krad-ade/run/main/token", // from tokenfile.Write
		BinDir:    dir,
	}.Env(api.TerminalID{Environment: "build", Terminal: 3})
	fmt.Println(env) // for tmux new-window -e
}
