package worktree

import (
	"encoding/json"

	"github.com/krad-ade/krad/api"
)

// The JSON of File and Changes carries paths and patches without loss, by api's rule for strings
// of any bytes (api.SplitName, api.SplitText): "path" and, when the path is not UTF-8,
// "path_base64"; "patch", or "patch_base64" when the patch is not UTF-8.

type fileJSON struct {
	Path          string `json:"path"`
	PathBase64    string `json:"path_base64,omitempty"`
	OldPath       string `json:"old_path,omitempty"`
	OldPathBase64 string `json:"old_path_base64,omitempty"`
	Status        string `json:"status"`
	Added         int    `json:"added"`
	Deleted       int    `json:"deleted"`
	Binary        bool   `json:"binary,omitempty"`
	LeftOut       string `json:"left_out,omitempty"`
}

// MarshalJSON writes f with its paths in api's exact form.
func (f File) MarshalJSON() ([]byte, error) {
	j := fileJSON{Status: f.Status, Added: f.Added, Deleted: f.Deleted, Binary: f.Binary, LeftOut: f.LeftOut}
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
	*f = File{Path: path, OldPath: old, Status: j.Status, Added: j.Added, Deleted: j.Deleted, Binary: j.Binary, LeftOut: j.LeftOut}
	return nil
}

// changesJSON is Changes on the wire: its fields, but Patch in api's exact form.
type changesJSON struct {
	changesFields
	Patch       string `json:"patch,omitempty"`
	PatchBase64 string `json:"patch_base64,omitempty"`
}

// changesFields are Changes's fields but Patch, with the same tags.
type changesFields struct {
	Group       string   `json:"group"`
	Base        string   `json:"base"`
	Head        string   `json:"head,omitempty"`
	Commits     []Commit `json:"commits,omitempty"`
	MoreCommits bool     `json:"more_commits,omitempty"`
	Files       []File   `json:"files"`
}

// MarshalJSON writes c with its patch in api's exact form.
func (c Changes) MarshalJSON() ([]byte, error) {
	j := changesJSON{changesFields: changesFields{Group: c.Group, Base: c.Base, Head: c.Head,
		Commits: c.Commits, MoreCommits: c.MoreCommits, Files: c.Files}}
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
	f := j.changesFields
	*c = Changes{Group: f.Group, Base: f.Base, Head: f.Head, Commits: f.Commits, MoreCommits: f.MoreCommits, Files: f.Files, Patch: patch}
	return nil
}
