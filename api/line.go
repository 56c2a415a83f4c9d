package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxRequestLine is the longest request line the bus reads, newline not counted (the spec's
// 64 KiB). A longer line is answered with bad_request.
const MaxRequestLine = 64 << 10

// MaxAnswerLine is the longest answer line the client reads. Answers carry screens and patches, so
// they may be longer than requests.
const MaxAnswerLine = 16 << 20

// ReadLine reads one line that ends in "\n" and is at most max bytes long without it, and returns
// it without the newline. It never holds more than max bytes plus the reader's buffer, however long
// the line. Every error is an *Error with code bad_request; one caused by the reader (a deadline, a
// reset) unwraps to the reader's error.
func ReadLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 || (err != nil && len(line)+len(chunk) > max) {
			return nil, Errorf(CodeBadRequest, "the line is longer than %d bytes", max)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) == 0:
			return nil, &Error{Code: CodeBadRequest, Message: "the connection closed before a line arrived", cause: err}
		case errors.Is(err, io.EOF):
			return nil, &Error{Code: CodeBadRequest, Message: "the line did not end in a newline", cause: err}
		default:
			return nil, &Error{Code: CodeBadRequest, Message: "reading the line failed", cause: err}
		}
	}
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
