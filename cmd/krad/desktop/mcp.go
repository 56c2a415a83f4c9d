package desktop

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/krad-ade/krad/cmd/krad/cli"
	"github.com/krad-ade/krad/internal/termsafe"
)

// ServeMCPArg, as krad-ade's first argument, makes it krad mcp's server: the arguments after it
// are krad's own, after "krad" (mcp and its flags).
const ServeMCPArg = "--serve-krad-mcp"

// AppProgram is the name of krad-ade's program, which ExecMCPServer looks for.
const AppProgram = "krad-ade"

// ExecMCPServer replaces this process with krad-ade's, as krad mcp's server: args are krad's
// (os.Args: "krad", "mcp", its flags), the environment and the standard streams stay. krad-ade
// is the one beside krad's own file (as scripts/start and the app's folder of programs have
// them), else the first on PATH. It returns only when it cannot: the error says what to do.
func ExecMCPServer(args []string) error {
	app, err := findApp()
	if err != nil {
		return err
	}
	argv := append([]string{AppProgram, ServeMCPArg}, args[1:]...)
	return execProgram(app, argv)
}

// findApp is krad-ade beside krad's own file, else on PATH.
func findApp() (string, error) {
	where := "beside krad"
	if self, err := os.Executable(); err == nil {
		if self, err = filepath.EvalSymlinks(self); err == nil {
			where = "in " + termsafe.Quote(filepath.Dir(self))
			beside := filepath.Join(filepath.Dir(self), AppProgram)
			if info, err := os.Stat(beside); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
				return beside, nil
			}
		}
	}
	path, err := exec.LookPath(AppProgram)
	if err == nil {
		return path, nil
	}
	if errors.Is(err, exec.ErrDot) {
		return "", cli.WithHint(fmt.Errorf("krad mcp runs krad-ade's MCP server, and the only krad-ade on PATH is in a relative folder (%s)", termsafe.Quote(path)),
			"put krad-ade beside krad, or its folder on PATH by an absolute path")
	}
	return "", cli.WithHint(fmt.Errorf("krad mcp runs krad-ade's MCP server, and there is no krad-ade %s or on PATH", where),
		"install krad-ade and krad together (scripts/start builds both into one folder)")
}
