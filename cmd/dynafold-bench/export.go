package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// exportRuns measures dynafold export of the first --sizes dataset to a
// local directory and to an s3rver of its own: items/s and MB/s of JSON
// (the manifest's uncompressed bytes), CPU and peak RSS.
func exportRuns(ctx context.Context, o options, work, dynafold, config string) ([]scenario, error) {
	size := o.sizes[0]
	dsn, err := generate(ctx, o.pgDSN, size)
	if err != nil {
		return nil, err
	}
	var out []scenario
	dir := filepath.Join(work, "export-dir")
	sc, err := exportRun(ctx, o, work, dynafold, config, dsn, "dir", nil, "file://"+dir+"/", func() ([]byte, error) {
		return os.ReadFile(filepath.Join(dir, "manifest.json"))
	})
	if err != nil {
		return nil, err
	}
	out = append(out, *sc)
	os.RemoveAll(dir)

	s3dir := filepath.Join(work, "s3rver")
	if err := os.MkdirAll(s3dir, 0o755); err != nil {
		return nil, err
	}
	srv, err := startServer(ctx, filepath.Join(work, "s3rver.log"), "node", filepath.Join(o.repo, "node_modules", "s3rver", "bin", "s3rver.js"),
		"-d", s3dir, "-a", "127.0.0.1", "-p", "{port}", "--silent", "--allow-mismatched-signatures", "--no-vhost-buckets", "--configure-bucket", "bench")
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	env := []string{"AWS_ACCESS_KEY_ID=S3RVER", "AWS_SECRET_ACCESS_KEY=S3RVER"}
	sc, err = exportRun(ctx, o, work, dynafold, config, dsn, "S3 (s3rver)", env, "s3://bench/run/", func() ([]byte, error) {
		// How s3rver stores an object on disk.
		return os.ReadFile(filepath.Join(s3dir, "bench", "run", "manifest.json._S3rver_object"))
	}, "--s3-endpoint", srv.URL, "--spool-dir", filepath.Join(work, "spool"))
	if err != nil {
		return nil, err
	}
	return append(out, *sc), nil
}

func exportRun(ctx context.Context, o options, work, dynafold, config, dsn, dest string, env []string, to string, manifest func() ([]byte, error), extra ...string) (*scenario, error) {
	path := filepath.Join(work, "export.report.json")
	args := append([]string{"export", "--config", config, "--table", "bench_export", "--source-dsn", dsn, "--to", to,
		"--checkpoint", filepath.Join(work, "export.checkpoint.json"), "--restart", "--progress", "none", "--report", path,
		"--writers", strconv.Itoa(o.writers), "--concurrency", strconv.Itoa(o.readers)}, extra...)
	m, err := runMeasured(ctx, env, dynafold, args...)
	if err != nil {
		return nil, err
	}
	var rep report
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, err
	}
	var man struct {
		Bytes int64 `json:"bytes"`
		Size  int64 `json:"size"`
		Files []any `json:"files"`
	}
	if data, err = manifest(); err != nil {
		return nil, fmt.Errorf("reading the export's manifest: %w", err)
	}
	if err := json.Unmarshal(data, &man); err != nil {
		return nil, err
	}
	t := rep.Summary.Total
	note := fmt.Sprintf("%.1f MB/s of JSON (%.0f MB, %.0f MB gzip), %d files", float64(man.Bytes)/(1<<20)/t.Seconds, float64(man.Bytes)/(1<<20), float64(man.Size)/(1<<20), len(man.Files))
	sc := line(fmt.Sprintf("dynafold export → %s (%s items)", dest, human(int(t.ItemsWritten))), t.ItemsWritten, t.Seconds, m, note)
	return &sc, nil
}
