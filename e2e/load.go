//go:build e2e

package e2e

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// loadForeignImage makes the image tag for another processor from the root filesystem tarball at
// tarPath: `docker load` of an image archive (docker save's format) holding the tarball as its one
// layer, with a config that names the architecture. The tarball is the layer as it is, so the
// image holds what `docker import` would make of it. Why not `docker import --platform`: Docker
// Engine 20.10 (Debian bookworm's docker.io) takes the option and still labels the image with
// this machine's architecture, and `docker run --platform linux/arm64` then refuses it.
func loadForeignImage(ctx context.Context, recipe hostRecipe, tarPath, tag string) error {
	f, err := os.Open(tarPath)
	if err != nil {
		return fmt.Errorf("image archive: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("image archive: %w", err)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeImageArchive(pw, f, fi.Size(), recipe, tag)) }()
	_, err = dockerNoTimeout(ctx, pr, "load", "--quiet")
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return err
	}
	got, err := docker(ctx, nil, "image", "inspect", "--format", "{{.Os}}/{{.Architecture}}", tag)
	if err != nil {
		return err
	}
	if got != "linux/"+recipe.arch {
		return fmt.Errorf("docker load made %s a %s image, not linux/%s", tag, got, recipe.arch)
	}
	return nil
}

// writeImageArchive writes docker save's format: the layer, then its config (which names the
// layer by its SHA-256), then manifest.json, which docker load reads first whatever the order.
func writeImageArchive(w io.Writer, layer io.Reader, size int64, recipe hostRecipe, tag string) error {
	tw := tar.NewWriter(w)
	now := time.Now().UTC()
	add := func(name string, size int64) error {
		return tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: now, Typeflag: tar.TypeReg})
	}
	if err := add("layer/layer.tar", size); err != nil {
		return err
	}
	h := sha256.New()
	if n, err := io.Copy(io.MultiWriter(tw, h), layer); err != nil {
		return fmt.Errorf("image archive: the layer: %w", err)
	} else if n != size {
		return fmt.Errorf("image archive: the layer has %d bytes, not %d", n, size)
	}
	type runConfig struct {
		Cmd    []string          `json:"Cmd"`
		Labels map[string]string `json:"Labels"`
	}
	config, err := json.Marshal(struct {
		Architecture string    `json:"architecture"`
		OS           string    `json:"os"`
		Created      time.Time `json:"created"`
		Config       runConfig `json:"config"`
		RootFS       struct {
			Type    string   `json:"type"`
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
		History []map[string]any `json:"history"`
	}{
		Architecture: recipe.arch,
		OS:           "linux",
		Created:      now,
		Config: runConfig{
			Cmd:    []string{hostEntrypoint},
			Labels: map[string]string{label: hostImageLabel, hostRecipeLabel: recipe.hash},
		},
		RootFS: struct {
			Type    string   `json:"type"`
			DiffIDs []string `json:"diff_ids"`
		}{"layers", []string{"sha256:" + hex.EncodeToString(h.Sum(nil))}},
		History: []map[string]any{{"created": now, "created_by": "mmdebstrap --architectures=" + recipe.arch + " (krad e2e)"}},
	})
	if err != nil {
		return err
	}
	sum := sha256.Sum256(config)
	configName := hex.EncodeToString(sum[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{
		"Config":   configName,
		"RepoTags": []string{tag},
		"Layers":   []string{"layer/layer.tar"},
	}})
	if err != nil {
		return err
	}
	for _, file := range []struct {
		name string
		data []byte
	}{{configName, config}, {"manifest.json", manifest}} {
		if err := add(file.name, int64(len(file.data))); err != nil {
			return err
		}
		if _, err := tw.Write(file.data); err != nil {
			return err
		}
	}
	return tw.Close()
}
