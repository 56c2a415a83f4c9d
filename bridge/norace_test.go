//go:build !race

package bridge_test

const raceEnabled = false
