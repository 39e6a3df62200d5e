package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// exportRuns measures dynafold export of each --sizes dataset to a local
// directory and to an s3rver of its own: items/s and MB/s of JSON (the
// manifest's uncompressed bytes), CPU and peak RSS, and for S3 the CPU the
// server itself spent (from /proc, while the export ran): dynafold's own
// figures leave it out, as the no-op endpoint's are left out of migrate's.
func exportRuns(ctx context.Context, o options, work, dynafold, config string) ([]scenario, error) {
	var out []scenario
	for _, size := range o.sizes {
		lines, err := exportSize(ctx, o, work, dynafold, config, size)
		if err != nil {
			return nil, err
		}
		out = append(out, lines...)
	}
	return out, nil
}

func exportSize(ctx context.Context, o options, work, dynafold, config string, size int) ([]scenario, error) {
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
	defer os.RemoveAll(s3dir)
	srv, err := startServer(ctx, filepath.Join(work, "s3rver.log"), "node", filepath.Join(o.repo, "node_modules", "s3rver", "bin", "s3rver.js"),
		"-d", s3dir, "-a", "127.0.0.1", "-p", "{port}", "--silent", "--allow-mismatched-signatures", "--no-vhost-buckets", "--configure-bucket", "bench")
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	before, err := procCPU(srv.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	env := []string{"AWS_ACCESS_KEY_ID=S3RVER", "AWS_SECRET_ACCESS_KEY=S3RVER"}
	sc, err = exportRun(ctx, o, work, dynafold, config, dsn, "S3 (s3rver)", env, "s3://bench/run/", func() ([]byte, error) {
		// How s3rver stores an object on disk.
		return os.ReadFile(filepath.Join(s3dir, "bench", "run", "manifest.json._S3rver_object"))
	}, "--s3-endpoint", srv.URL, "--spool-dir", filepath.Join(work, "spool"))
	if err != nil {
		return nil, err
	}
	after, err := procCPU(srv.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	sc.ServerCPUPerM = (after - before) / float64(sc.Items) * 1e6
	sc.Note += fmt.Sprintf("; s3rver itself: %.1f CPU-s per million items", sc.ServerCPUPerM)
	return append(out, *sc), nil
}

// procCPU is the user and system CPU seconds process pid has used, from
// /proc/<pid>/stat (in clock ticks of 1/100 s, USER_HZ on Linux).
func procCPU(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after it. utime and stime are fields 14 and 15.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	return (utime + stime) / 100, nil
}

// exportRatios is, for each export line, its CPU per item over the CPU per
// item of the migrate into the no-op endpoint of the same size in the same
// run (issue 28's target: at most 1.0).
func exportRatios(lines []scenario) map[string]float64 {
	migrate := map[int64]float64{}
	for _, l := range lines {
		if strings.HasPrefix(l.Name, "dynafold → no-op (") {
			migrate[l.Items] = l.CPUPerM
		}
	}
	out := map[string]float64{}
	for _, l := range lines {
		if m, ok := migrate[l.Items]; ok && strings.HasPrefix(l.Name, "dynafold export") {
			out[l.Name] = l.CPUPerM / m
		}
	}
	return out
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
