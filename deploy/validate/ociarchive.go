package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// OCIImage is the one image of an OCI archive (an image layout in a tar file, as buildah push
// oci-archive: writes it): its name, manifest digest (what a registry reports after an unconverted copy,
// and what a pod pins with @digest), config labels and layer blobs.
type OCIImage struct {
	Path     string
	RefName  string // the index's org.opencontainers.image.ref.name: the full reference ctr import gives it
	Digest   string // the manifest's digest, sha256:...
	Labels   map[string]string
	layers   []ociDescriptor
	archived map[string]bool // blob paths the archive holds
}

// RepositoryAndTag splits RefName at the tag's colon, the last one after the last slash: a registry's port
// (127.0.0.1:5000/blocknode/blocknode:1.2.3) is part of the repository, not a tag.
func (i *OCIImage) RepositoryAndTag() (repository, tag string) {
	colon := strings.LastIndex(i.RefName, ":")
	if colon < 0 || colon < strings.LastIndex(i.RefName, "/") {
		return i.RefName, ""
	}
	return i.RefName[:colon], i.RefName[colon+1:]
}

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

// The small JSON documents of the layout are read into memory; layers are streamed (WalkFiles).
const maxOCIDocument = 4 << 20

// ReadOCIArchive reads the index, manifest and config of the archive's one image.
func ReadOCIArchive(path string) (*OCIImage, error) {
	docs := map[string][]byte{}
	archived := map[string]bool{}
	err := walkTar(path, func(h *tar.Header, r io.Reader) error {
		archived[h.Name] = true
		if h.Size > maxOCIDocument {
			return nil
		}
		data, err := io.ReadAll(r)
		docs[h.Name] = data
		return err
	})
	if err != nil {
		return nil, err
	}
	var index struct {
		Manifests []ociDescriptor `json:"manifests"`
	}
	if err := decodeDoc(docs, "index.json", &index); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(index.Manifests) != 1 {
		return nil, fmt.Errorf("%s: %d images in index.json, want 1", path, len(index.Manifests))
	}
	image := &OCIImage{Path: path, RefName: index.Manifests[0].Annotations["org.opencontainers.image.ref.name"],
		Digest: index.Manifests[0].Digest, archived: archived}
	var manifest struct {
		Config ociDescriptor   `json:"config"`
		Layers []ociDescriptor `json:"layers"`
	}
	if err := decodeDoc(docs, blobPath(image.Digest), &manifest); err != nil {
		return nil, fmt.Errorf("%s: manifest: %w", path, err)
	}
	var config struct {
		Config struct {
			Labels map[string]string `json:"Labels"`
		} `json:"config"`
	}
	if err := decodeDoc(docs, blobPath(manifest.Config.Digest), &config); err != nil {
		return nil, fmt.Errorf("%s: config: %w", path, err)
	}
	image.Labels = config.Config.Labels
	image.layers = manifest.Layers
	for _, layer := range image.layers {
		if !archived[blobPath(layer.Digest)] {
			return nil, fmt.Errorf("%s: layer %s is not in the archive", path, layer.Digest)
		}
	}
	return image, nil
}

func blobPath(digest string) string {
	return "blobs/" + strings.Replace(digest, ":", "/", 1)
}

func decodeDoc(docs map[string][]byte, name string, v any) error {
	data, ok := docs[name]
	if !ok {
		return fmt.Errorf("no %s", name)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// WalkFiles calls fn for every regular file and symbolic link in the image's layers, lowest layer first,
// with its path relative to / (no leading slash or "./"). Whiteouts are not applied: blocknode's image has
// one layer.
func (image *OCIImage) WalkFiles(fn func(h *tar.Header, name string, r io.Reader) error) error {
	for _, layer := range image.layers {
		want := blobPath(layer.Digest)
		err := walkTar(image.Path, func(h *tar.Header, r io.Reader) error {
			if h.Name != want {
				return nil
			}
			var content io.Reader = r
			if strings.HasSuffix(layer.MediaType, "+gzip") {
				gz, err := gzip.NewReader(r)
				if err != nil {
					return fmt.Errorf("layer %s: %w", layer.Digest, err)
				}
				defer gz.Close()
				content = gz
			} else if strings.Contains(layer.MediaType, "+") {
				return fmt.Errorf("layer %s: media type %s not read here", layer.Digest, layer.MediaType)
			}
			tr := tar.NewReader(content)
			for {
				fh, err := tr.Next()
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return fmt.Errorf("layer %s: %w", layer.Digest, err)
				}
				if fh.Typeflag == tar.TypeReg || fh.Typeflag == tar.TypeSymlink {
					if err := fn(fh, strings.TrimPrefix(strings.TrimPrefix(fh.Name, "./"), "/"), tr); err != nil {
						return err
					}
				}
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ReadFiles returns the contents of the image's regular files for which want is true, and the targets of
// its symbolic links for which it is.
func (image *OCIImage) ReadFiles(want func(name string) bool) (files map[string][]byte, links map[string]string, err error) {
	files, links = map[string][]byte{}, map[string]string{}
	err = image.WalkFiles(func(h *tar.Header, name string, r io.Reader) error {
		if !want(name) {
			return nil
		}
		if h.Typeflag == tar.TypeSymlink {
			links[name] = h.Linkname
			return nil
		}
		data, err := io.ReadAll(r)
		files[name] = data
		return err
	})
	return files, links, err
}

func walkTar(path string, fn func(h *tar.Header, r io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if h.Typeflag == tar.TypeReg {
			if err := fn(h, tr); err != nil {
				return err
			}
		}
	}
}
