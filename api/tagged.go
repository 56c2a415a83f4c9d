package api

import (
	"bytes"
	"encoding/json"
)

// Requests, answers and callers share one JSON shape: a bare string for a variant without fields
// ("List"), or an object with exactly one key for a variant with fields ({"Wait":{…}}).

// decodeTagged splits a tagged value into its name and, for the object form, its body. what names
// the value in errors ("request", "from").
func decodeTagged(raw json.RawMessage, what string) (name string, body json.RawMessage, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil, Errorf(CodeBadRequest, "%s is missing", what)
	}
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &name); err != nil {
			return "", nil, Errorf(CodeBadRequest, "%s is not a valid JSON string", what)
		}
		return name, nil, nil
	case '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return "", nil, Errorf(CodeBadRequest, "%s is not a valid JSON object", what)
		}
		if len(m) != 1 {
			return "", nil, Errorf(CodeBadRequest, "%s must be a string or an object with exactly one key, not %d keys", what, len(m))
		}
		for k, v := range m {
			return k, v, nil
		}
	}
	return "", nil, Errorf(CodeBadRequest, "%s must be a string or an object with one key", what)
}

// encodeTagged is the inverse of decodeTagged: a bare string when body is nil.
func encodeTagged(name string, body any) ([]byte, error) {
	if body == nil {
		return json.Marshal(name)
	}
	return json.Marshal(map[string]any{name: body})
}

// decodeStrict decodes an object body, refusing unknown fields and trailing data.
func decodeStrict(body json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errTrailing
	}
	return nil
}

var errTrailing = &Error{Code: CodeBadRequest, Message: "trailing data after the value"}
