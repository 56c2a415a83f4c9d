// Package fileowner says which user owns a file, for the checks that refuse another user's
// files: config.toml and its folder, api.json, a token file.
package fileowner
