package design

import (
	"path/filepath"
	"strings"
)

// ConfigName is how the artifacts name the mapping file at path, seen
// from the working directory wd: the path relative to wd when the file
// is inside it, its base name otherwise. The artifacts are made to be
// shared (committed, handed to reviewers), so the path an operator typed
// (/home/alice/work/shop.yaml) must not carry their machine's layout
// into them.
func ConfigName(path, wd string) string {
	if path == "" {
		return ""
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Base(path)
	}
	if wd != "" {
		if rel, ok := inside(abs, wd); ok {
			return filepath.ToSlash(rel)
		}
		// A working directory reached through a symbolic link (/tmp on
		// some systems) still contains the file.
		if ra, err := filepath.EvalSymlinks(abs); err == nil {
			if rw, err := filepath.EvalSymlinks(wd); err == nil {
				if rel, ok := inside(ra, rw); ok {
					return filepath.ToSlash(rel)
				}
			}
		}
	}
	return filepath.Base(abs)
}

// inside is path relative to dir when path is below dir.
func inside(path, dir string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}
