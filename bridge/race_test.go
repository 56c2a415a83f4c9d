//go:build race

package bridge_test

// raceEnabled: the tests run under the race detector, which makes memory figures larger.
const raceEnabled = true
