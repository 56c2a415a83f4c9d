package ui

import (
	"bytes"
	"sync"

	"github.com/krad-ade/krad/config"
)

// LogLines keeps the last lines written to it, for the log pane: the app's log handler writes
// here as well as to the log file. Writes never block on the UI.
type LogLines struct {
	mu      sync.Mutex
	lines   []string
	next    uint64 // the number of the next line written
	partial []byte
	notify  chan struct{}
}

// logKeep is how many lines the pane can scroll back over.
const logKeep = 500

// NewLogLines makes an empty LogLines.
func NewLogLines() *LogLines { return &LogLines{notify: make(chan struct{}, 1)} }

// Write takes whole lines; a line's end may come in a later write.
func (l *LogLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	data := append(l.partial, p...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(data[:i]))
		l.next++
		data = data[i+1:]
	}
	l.partial = append([]byte(nil), data...)
	if len(l.lines) > 2*logKeep {
		l.lines = append([]string(nil), l.lines[len(l.lines)-logKeep:]...)
	}
	select {
	case l.notify <- struct{}{}:
	default:
	}
	return len(p), nil
}

// since returns the lines after line number from (at most logKeep) and the next line's number.
func (l *LogLines) since(from uint64) ([]string, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := min(l.next-from, uint64(len(l.lines)), logKeep)
	return append([]string(nil), l.lines[len(l.lines)-int(n):]...), l.next
}

// Settings is the app's configuration as its config watcher last read it, for the settings
// screen: the last good config, and the error of a file that did not apply (it stays until the
// file applies again).
type Settings struct {
	mu     sync.Mutex
	cfg    config.Config
	err    error
	notify chan struct{}
}

// NewSettings starts from the config the app started with.
func NewSettings(c config.Config) *Settings {
	return &Settings{cfg: c, notify: make(chan struct{}, 1)}
}

// Applied records a config that the app applied.
func (s *Settings) Applied(c config.Config) { s.set(c, nil, true) }

// Recovered records that the file applies again, saying what the last good config says.
func (s *Settings) Recovered() {
	s.mu.Lock()
	c := s.cfg
	s.mu.Unlock()
	s.set(c, nil, true)
}

// Failed records that the file did not apply: the last good config stays.
func (s *Settings) Failed(err error) { s.set(config.Config{}, err, false) }

func (s *Settings) set(c config.Config, err error, ok bool) {
	s.mu.Lock()
	if ok {
		s.cfg = c
	}
	s.err = err
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *Settings) get() (config.Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg, s.err
}
