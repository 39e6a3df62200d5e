package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/internal/faultproxy"
	"github.com/dynafold/dynafold/sink"
)

// faultMix is one line of the fault scenario: the faults the proxy injects
// on BatchWriteItem, on top of the added latency every line shares.
type faultMix struct {
	Name string
	cfg  faultproxy.Config
}

// faultMixes are the mixes of issue 16: each fault alone, then together.
// Throttled is ProvisionedThroughputExceededException; 500 alternates 500
// and 503 (neither reaches the table); dropped connections are reset half
// before and half after the table applied the write.
func faultMixes() []faultMix {
	const throttled, partial, e5xx, dropped = 0.10, 0.20, 0.05, 0.02
	return []faultMix{
		{"none", faultproxy.Config{}},
		{"10% throttled", faultproxy.Config{Throttle: throttled}},
		{"20% partial batches", faultproxy.Config{Partial: partial}},
		{"5% HTTP 500/503", faultproxy.Config{Error5xx: e5xx}},
		{"2% dropped connections", faultproxy.Config{Reset: dropped / 2, ResetAfter: dropped / 2}},
		{"10% throttled + 5% 500", faultproxy.Config{Throttle: throttled, Error5xx: e5xx}},
		{"10% throttled + 2% dropped", faultproxy.Config{Throttle: throttled, Reset: dropped / 2, ResetAfter: dropped / 2}},
		{"10% throttled + 5% 500 + 2% dropped", faultproxy.Config{Throttle: throttled, Error5xx: e5xx, Reset: dropped / 2, ResetAfter: dropped / 2}},
		{"10% throttled + 20% partial + 5% 500 + 2% dropped", faultproxy.Config{Throttle: throttled, Partial: partial, Error5xx: e5xx, Reset: dropped / 2, ResetAfter: dropped / 2}},
	}
}

// faultLine is the outcome of one mix: the median of its repeats.
type faultLine struct {
	Mix     string    `json:"mix"`
	Seconds float64   `json:"seconds"`
	Runs    []float64 `json:"runs_seconds"`
	// Ratio is the median over the rounds of the mix's time over the clean
	// run's in the same round.
	Ratio       float64 `json:"ratio_to_clean"`
	ItemsPerSec float64 `json:"items_per_second"`
	// Writes are the counters of the median run.
	Writes sink.Stats `json:"writes"`
}

// faultRun migrates the same dataset into a dynalite of its own through
// the fault proxy once per mix (repeat rounds of every mix, so a slow spell
// of the machine is spread over the mixes), each into a fresh table, and
// checks that every item is in the table. Ratios are to the clean line of
// the same run.
func faultRun(ctx context.Context, o options, work, dynafold, config string) ([]faultLine, error) {
	dsn, err := generate(ctx, o.pgDSN, o.faultItems)
	if err != nil {
		return nil, err
	}
	dl, err := startServer(ctx, filepath.Join(work, "dynalite-faults.log"), "node", filepath.Join(o.repo, "scripts", "dynalite.js"),
		"--host", "127.0.0.1", "--port", "{port}", "--createTableMs", "0", "--deleteTableMs", "0")
	if err != nil {
		return nil, err
	}
	defer dl.stop()
	client, err := sink.NewClient(ctx, sink.ClientOptions{Endpoint: dl.URL})
	if err != nil {
		return nil, err
	}
	mixes := faultMixes()
	if o.faultMixes != "" {
		mixes, err = selectMixes(mixes, o.faultMixes)
		if err != nil {
			return nil, err
		}
	}
	runs := make([][]*report, len(mixes))
	for round := 0; round < o.faultRepeat; round++ {
		for i, mix := range mixes {
			rep, err := faultOnce(ctx, o, work, dynafold, config, dsn, dl.URL, client, mix)
			if err != nil {
				return nil, fmt.Errorf("fault mix %q: %w", mix.Name, err)
			}
			fmt.Fprintf(os.Stderr, "faults: %-52s %6.1f s  %s\n", mix.Name, rep.Summary.Total.Seconds, writesNote(rep.Summary.Writes))
			runs[i] = append(runs[i], rep)
		}
	}
	lines := make([]faultLine, len(mixes))
	for i, mix := range mixes {
		med := median(runs[i])
		l := faultLine{Mix: mix.Name, Seconds: med.Summary.Total.Seconds, Writes: med.Summary.Writes,
			ItemsPerSec: float64(med.Summary.Total.ItemsWritten) / med.Summary.Total.Seconds}
		for _, r := range runs[i] {
			l.Runs = append(l.Runs, r.Summary.Total.Seconds)
		}
		lines[i] = l
	}
	if mixes[0].Name == "none" {
		// Each mix against the clean run of its own round, then the median:
		// on a machine whose load changes, runs minutes apart compare badly.
		for i := range lines {
			ratios := make([]float64, len(runs[i]))
			for r := range runs[i] {
				ratios[r] = runs[i][r].Summary.Total.Seconds / runs[0][r].Summary.Total.Seconds
			}
			sort.Float64s(ratios)
			lines[i].Ratio = ratios[len(ratios)/2]
		}
	}
	return lines, nil
}

// selectMixes keeps the mixes whose 1-based positions are listed ("1,8,9").
func selectMixes(all []faultMix, list string) ([]faultMix, error) {
	var out []faultMix
	for _, n := range splitInts(list) {
		if n < 1 || n > len(all) {
			return nil, fmt.Errorf("--fault-mixes: %d is not a mix between 1 and %d", n, len(all))
		}
		out = append(out, all[n-1])
	}
	return out, nil
}

func faultOnce(ctx context.Context, o options, work, dynafold, config, dsn, backend string, client *dynamodb.Client, mix faultMix) (*report, error) {
	table := "bench_faults"
	if err := createTable(ctx, dynafold, config, backend, table); err != nil {
		return nil, err
	}
	defer func() {
		_, _ = client.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	}()
	cfg := mix.cfg
	cfg.Latency = o.faultLatency
	cfg.Seed = 16
	proxy, err := faultproxy.New(backend, cfg)
	if err != nil {
		return nil, err
	}
	url, stop, err := proxy.Start()
	if err != nil {
		return nil, err
	}
	_, rep, err := migrateRun(ctx, o, work, dynafold, config, url, table, dsn)
	stop()
	if err != nil {
		return nil, err
	}
	want := int64(o.faultItems / itemsPerPortfolio * itemsPerPortfolio)
	if got := rep.Summary.Total.ItemsWritten; got != want {
		return nil, fmt.Errorf("%d items acknowledged, want %d", got, want)
	}
	n, err := countItems(ctx, client, table)
	if err != nil {
		return nil, err
	}
	if n != want {
		return nil, fmt.Errorf("the table holds %d items, want %d", n, want)
	}
	return rep, nil
}

// countItems counts the table's items with a scan, independently of what
// dynafold reported.
func countItems(ctx context.Context, client *dynamodb.Client, table string) (int64, error) {
	var n int64
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table), Select: types.SelectCount})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, fmt.Errorf("counting the items of %s: %w", table, err)
		}
		n += int64(page.Count)
	}
	return n, nil
}

func median(rs []*report) *report {
	s := append([]*report(nil), rs...)
	sort.Slice(s, func(i, j int) bool { return s[i].Summary.Total.Seconds < s[j].Summary.Total.Seconds })
	return s[len(s)/2]
}

func writesNote(w sink.Stats) string {
	return fmt.Sprintf("%d requests, %d throttled, %d retried, %d rate cuts (%d undone)", w.Requests, w.Throttled, w.Retried, w.RateCuts, w.RateCutsUndone)
}

func printFaults(lines []faultLine, items int, o options) {
	fmt.Printf("\nfaults on BatchWriteItem, PostgreSQL → fault proxy (up to %s latency) → dynalite, %s items; medians of %d rounds (ratio: to the clean run of the same round):\n",
		o.faultLatency, human(items/itemsPerPortfolio*itemsPerPortfolio), o.faultRepeat)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULTS INJECTED\tSECONDS\tRUNS\tVS NO FAULTS\tITEMS/S\tWRITES")
	for _, l := range lines {
		ratio := "-"
		if l.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f×", l.Ratio)
		}
		runs := make([]string, len(l.Runs))
		for i, r := range l.Runs {
			runs[i] = fmt.Sprintf("%.1f", r)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\t%.0f\t%s\n", l.Mix, l.Seconds, strings.Join(runs, " "), ratio, l.ItemsPerSec, writesNote(l.Writes))
	}
	tw.Flush()
}
