//go:build !unix

package extension

import "os/exec"

func setProcAttr(*exec.Cmd) {}
