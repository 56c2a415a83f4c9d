package desktop

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/krad-ade/krad/cmd/krad/cli"
	"github.com/krad-ade/krad/discovery"
)

// Discover finds the bus through api.json in the app's config folder ([cli.Options.Discover]). It
// sets Path even when the file cannot be read, so that krad can say where it looked; the error
// then does not name it.
func Discover(getenv func(string) string) (cli.Discovered, error) {
	dir, err := discovery.Dir(getenv)
	if err != nil {
		return cli.Discovered{}, err
	}
	path := filepath.Join(dir, discovery.FileName)
	f, err := discovery.Read(path)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		// krad names the file itself, as ~/…: the error says what is wrong with it, once.
		err = pe.Err
	}
	if err != nil {
		return cli.Discovered{Path: path}, err
	}
	return cli.Discovered{Path: path, Endpoint: f.Endpoint, Token: f.Token, PID: f.PID}, nil
}
