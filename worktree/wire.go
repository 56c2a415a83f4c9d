package worktree

import (
	"encoding/json"

	"github.com/krad-ade/krad/api"
)

// The JSON of File and Changes carries paths and patches without loss, by api's rule for strings
// of any bytes (api.SplitName, api.SplitText): "path" and, when the path is not UTF-8,
// "path_base64"; "patch", or "patch_base64" when the patch is not UTF-8.

// fileJSON is File on the wire: its paths in api's exact form, then its other fields. Its own
// Path and OldPath hide those of the File inside (encoding/json takes the shallower of two fields
// of one name), and come first, as File declares them.
type fileJSON struct {
	Path          string `json:"path"`
	PathBase64    string `json:"path_base64,omitempty"`
	OldPath       string `json:"old_path,omitempty"`
	OldPathBase64 string `json:"old_path_base64,omitempty"`
	fileFields
}

// fileFields is File without its methods, so that encoding fileJSON does not call MarshalJSON
// again.
type fileFields File

// MarshalJSON writes f with its paths in api's exact form.
func (f File) MarshalJSON() ([]byte, error) {
	j := fileJSON{fileFields: fileFields(f)}
	j.Path, j.PathBase64 = api.SplitName(f.Path)
	if f.OldPath != "" {
		j.OldPath, j.OldPathBase64 = api.SplitName(f.OldPath)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes, the paths' bytes exact.
func (f *File) UnmarshalJSON(b []byte) error {
	var j fileJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	path, err := api.JoinExact("path", j.Path, j.PathBase64)
	if err != nil {
		return err
	}
	old, err := api.JoinExact("old_path", j.OldPath, j.OldPathBase64)
	if err != nil {
		return err
	}
	*f = File(j.fileFields)
	f.Path, f.OldPath = path, old
	return nil
}

// changesJSON is Changes on the wire: its fields, but Patch in api's exact form. Its own Patch
// hides the one of the Changes inside (encoding/json takes the shallower of two fields of one
// name), so that every other field of Changes is on the wire as it is declared.
type changesJSON struct {
	changesFields
	Patch       string `json:"patch,omitempty"`
	PatchBase64 string `json:"patch_base64,omitempty"`
}

// changesFields is Changes without its methods, so that encoding changesJSON does not call
// MarshalJSON again.
type changesFields Changes

// MarshalJSON writes c with its patch in api's exact form.
func (c Changes) MarshalJSON() ([]byte, error) {
	j := changesJSON{changesFields: changesFields(c)}
	if j.Files == nil {
		j.Files = []File{}
	}
	j.Patch, j.PatchBase64 = api.SplitText(c.Patch)
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes, the patch's bytes exact.
func (c *Changes) UnmarshalJSON(b []byte) error {
	var j changesJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	patch, err := api.JoinExact("patch", j.Patch, j.PatchBase64)
	if err != nil {
		return err
	}
	*c = Changes(j.changesFields)
	c.Patch = patch
	return nil
}
