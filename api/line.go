package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxRequestLine is the longest request line the bus reads, newline not counted (the spec's
// 64 KiB). A longer line is answered with bad_request.
const MaxRequestLine = 64 << 10

// MaxAnswerLine is the longest answer line the client reads. Answers carry screens and patches, so
// they may be longer than requests: a Changes answer holds a patch of up to MaxPatch bytes, which
// the wire carries in at most 4/3 of its size (SplitText), besides its list of files.
const MaxAnswerLine = 32 << 20

// ErrAnswerTooLong is the client's error for an answer line longer than MaxAnswerLine: the app
// answered, and its answer is more than the client reads. It is not a sign that the endpoint is
// not the bus.
var ErrAnswerTooLong = fmt.Errorf("the answer is longer than %d MiB, the most a client reads", MaxAnswerLine>>20)

// errLineTooLong is the cause of ReadLine's error for a line over its limit.
var errLineTooLong = errors.New("line too long")

// ReadLine reads one line that ends in "\n" and is at most max bytes long without it, and returns
// it without the newline. It never holds more than max bytes plus the reader's buffer, however long
// the line. Every error is an *Error with code bad_request; one caused by the reader (a deadline, a
// reset) unwraps to the reader's error.
func ReadLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		// Peek returns as soon as any byte has arrived, so an over-long line is refused as soon
		// as it passes the limit, not when the reader's buffer happens to fill.
		if _, err := r.Peek(1); err != nil {
			switch {
			case errors.Is(err, io.EOF) && len(line) == 0:
				return nil, &Error{Code: CodeBadRequest, Message: "the connection closed before a line arrived", cause: err}
			case errors.Is(err, io.EOF):
				return nil, &Error{Code: CodeBadRequest, Message: "the line did not end in a newline", cause: err}
			default:
				return nil, &Error{Code: CodeBadRequest, Message: "reading the line failed", cause: err}
			}
		}
		b, _ := r.Peek(r.Buffered())
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			if len(line)+i > max {
				return nil, tooLong(max)
			}
			line = append(line, b[:i]...)
			_, _ = r.Discard(i + 1)
			return line, nil
		}
		if len(line)+len(b) > max {
			return nil, tooLong(max)
		}
		line = append(line, b...)
		_, _ = r.Discard(len(b))
	}
}

func tooLong(max int) *Error {
	return &Error{Code: CodeBadRequest, Message: fmt.Sprintf("the line is longer than %d bytes", max), cause: errLineTooLong}
}

// WriteLine writes v as one line of JSON followed by "\n".
func WriteLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode line: %w", err)
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write line: %w", err)
	}
	return nil
}
