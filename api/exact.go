package api

import (
	"encoding/base64"
	"fmt"
	"unicode/utf8"
)

// Strings that may hold any bytes (a file's path, a patch: git has them as bytes, and a file may
// be named in no encoding at all) travel in JSON without loss by one rule, written here once:
// such a field F is the JSON string "F" when it is valid UTF-8, and otherwise "F_base64", the
// exact bytes in standard base64. A JSON string cannot carry bytes that are not UTF-8
// (encoding/json puts U+FFFD in their place), and a patch with those bytes replaced no longer
// applies.
//
// A name (a path) keeps "F" in both cases, in the second with U+FFFD for each byte that is not
// UTF-8, so that a program that only shows it needs nothing else ([SplitName]). A text whose
// every byte matters (a patch) is only ever one of the two ([SplitText]); it is also sent as
// base64 when JSON's escapes would make it longer than base64 does (a patch of control
// characters), so that its wire size is never more than 4/3 of its own.

// SplitName is the wire form of name: text is name, or its lossy UTF-8 form when name is not
// UTF-8, and b64 is then the base64 of its bytes ("" otherwise).
func SplitName(name string) (text, b64 string) {
	if utf8.ValidString(name) {
		return name, ""
	}
	return toValidUTF8(name), base64.StdEncoding.EncodeToString([]byte(name))
}

// SplitText is the wire form of a text whose every byte matters: text when it is valid UTF-8
// and JSON's escapes cost less than base64, else "" and its base64.
func SplitText(s string) (text, b64 string) {
	if utf8.ValidString(s) && jsonStringLen(s) <= base64.StdEncoding.EncodedLen(len(s)) {
		return s, ""
	}
	return "", base64.StdEncoding.EncodeToString([]byte(s))
}

// JoinExact is the string back from its wire form: the bytes of b64 when it is set, else text.
// what names the field, for the error.
func JoinExact(what, text, b64 string) (string, error) {
	if b64 == "" {
		return text, nil
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", fmt.Errorf("%s_base64 is not standard base64", what)
	}
	return string(b), nil
}

// toValidUTF8 replaces each byte that is not part of valid UTF-8 with U+FFFD, as encoding/json
// does.
func toValidUTF8(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		out = append(out, r) // a bad byte comes as utf8.RuneError, one per byte
	}
	return string(out)
}

// jsonStringLen is how long encoding/json writes s as a string, quotes excluded: two bytes for
// \n, \r, \t, \" and \\, six for the other control characters, <, >, & (escaped for HTML) and
// U+2028, U+2029. s must be valid UTF-8.
func jsonStringLen(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t' || r == '"' || r == '\\':
			n += 2
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += utf8.RuneLen(r)
		}
	}
	return n
}
