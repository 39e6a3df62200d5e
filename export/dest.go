package export

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dynafold/dynafold/internal/durable"
)

// Destination is where an export's files go: a local directory or an S3
// prefix. Data files live under DataPrefix, the manifest beside it, so that
// an import of the data prefix reads nothing but data.
type Destination interface {
	// SpoolDir is where files are written before Commit.
	SpoolDir() string
	// Commit makes the spooled file at path durable under name (fsync and
	// rename, or upload) and removes the spool.
	Commit(ctx context.Context, path, name string) error
	// List returns the names of the data files present.
	List(ctx context.Context) ([]string, error)
	// Remove deletes data files (absent ones are no error).
	Remove(ctx context.Context, names []string) error
	// PutManifest stores the manifest durably; ManifestExists says if one
	// is there.
	PutManifest(ctx context.Context, data []byte) error
	ManifestExists(ctx context.Context) (bool, error)
	// ReadManifest returns the manifest, or nil without error when there
	// is none.
	ReadManifest(ctx context.Context) ([]byte, error)
	// RemoveManifest deletes the manifest (absent is no error).
	RemoveManifest(ctx context.Context) error
	// String names the destination for messages and the checkpoint.
	String() string
}

// ManifestName and DataDir are the names under the export's prefix.
const (
	ManifestName = "manifest.json"
	DataDir      = "data/"
)

// Parse splits a --to URL: file:///dir/ or s3://bucket/prefix/.
func Parse(to string) (scheme, bucket, prefix string, err error) {
	u, err := url.Parse(to)
	if err != nil {
		return "", "", "", fmt.Errorf("--to %q: %w", to, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return "", "", "", fmt.Errorf("--to %q: a file URL names a local directory, file:///path/", to)
		}
		if u.Path == "" {
			return "", "", "", fmt.Errorf("--to %q: no directory", to)
		}
		return "file", "", u.Path, nil
	case "s3":
		if u.Host == "" {
			return "", "", "", fmt.Errorf("--to %q: no bucket", to)
		}
		p := strings.TrimPrefix(u.Path, "/")
		if p != "" && !strings.HasSuffix(p, "/") {
			p += "/"
		}
		return "s3", u.Host, p, nil
	}
	return "", "", "", fmt.Errorf("--to %q: use file:///dir/ or s3://bucket/prefix/", to)
}

// Dir is a local directory destination.
type Dir struct{ root string }

// NewDir returns the directory destination at root, creating it (and its
// data directory) owner-only: the files hold the source's rows.
func NewDir(root string) (*Dir, error) {
	if err := durable.MkdirAll(filepath.Join(root, DataDir)); err != nil {
		return nil, err
	}
	return &Dir{root: root}, nil
}

func (d *Dir) String() string   { return "file://" + d.root }
func (d *Dir) SpoolDir() string { return filepath.Join(d.root, DataDir) }

// Commit implements Destination: the spool is in the data directory
// already and the sink has fsynced it, so durability is the rename and a
// directory fsync. (A data file is never replaced: its name is new.)
func (d *Dir) Commit(_ context.Context, path, name string) error {
	dst := filepath.Join(d.root, DataDir, name)
	if err := os.Rename(path, dst); err != nil {
		return err
	}
	return durable.SyncDir(filepath.Dir(dst))
}

// List implements Destination; spool files (dot-names) are not data.
func (d *Dir) List(context.Context) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(d.root, DataDir))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

// Remove implements Destination, with leftover spool files.
func (d *Dir) Remove(_ context.Context, names []string) error {
	for _, n := range names {
		if err := os.Remove(filepath.Join(d.root, DataDir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return durable.SyncDir(filepath.Join(d.root, DataDir))
}

// RemoveSpools deletes spool files a killed run left behind.
func (d *Dir) RemoveSpools() error {
	ents, err := os.ReadDir(filepath.Join(d.root, DataDir))
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") && strings.HasSuffix(e.Name(), ".spool") {
			_ = os.Remove(filepath.Join(d.root, DataDir, e.Name()))
		}
	}
	return nil
}

// PutManifest implements Destination: the manifest is replaced durably.
func (d *Dir) PutManifest(_ context.Context, data []byte) error {
	return durable.WriteFile(filepath.Join(d.root, ManifestName), data)
}

func (d *Dir) RemoveManifest(context.Context) error {
	if err := os.Remove(filepath.Join(d.root, ManifestName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (d *Dir) ReadManifest(context.Context) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(d.root, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// ManifestURL names the manifest of dest, for messages.
func ManifestURL(dest Destination) string {
	return strings.TrimSuffix(dest.String(), "/") + "/" + ManifestName
}

func (d *Dir) ManifestExists(context.Context) (bool, error) {
	_, err := os.Stat(filepath.Join(d.root, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
