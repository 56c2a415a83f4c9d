// Package pty opens a pseudo-terminal on Linux: its master, and the terminal a program is given
// (the slave), as tmux opens one for a window. krad-bench runs the app's UI on one, and tests
// run programs on one; the app itself opens none (tmux does).
package pty
