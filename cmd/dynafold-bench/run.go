package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/sink"
)

// options of a benchmark run.
type options struct {
	bin          string
	repo         string
	pgDSN        string
	sizes        []int
	dynalite     int
	alleycat     int
	budgetItems  int
	budgetWCU    int
	partitionWCU int
	writers      int
	readers      int
	out          string
	scenarios    map[string]bool
	faultItems   int
	faultRepeat  int
	// noopRepeat: rounds of the ceiling and the first --sizes run.
	noopRepeat   int
	faultLatency time.Duration
	faultMixes   string
	// incrementalItems sizes the incremental scenario (0 skips it).
	incrementalItems int
}

// scenarioNames are the values of --scenarios, in the order they run.
var scenarioNames = []string{"noop", "alleycat", "dynalite", "budget", "faults", "incremental", "export"}

// scenario is one measured line of the report.
type scenario struct {
	Name        string  `json:"name"`
	Items       int64   `json:"items"`
	Seconds     float64 `json:"seconds"`
	ItemsPerSec float64 `json:"items_per_second"`
	CPUPerM     float64 `json:"cpu_seconds_per_million_items"`
	PeakRSSMB   float64 `json:"peak_rss_mb"`
	// ServerCPUPerM is the CPU the server written to (s3rver) spent, per
	// million items, when the benchmark measures it.
	ServerCPUPerM float64 `json:"server_cpu_seconds_per_million_items,omitempty"`
	Note          string  `json:"note,omitempty"`
}

type results struct {
	Date      time.Time  `json:"date"`
	Command   string     `json:"command"`
	Scenarios []scenario `json:"scenarios"`
	Ratio     float64    `json:"ratio_to_ceiling"`
	// CPURatio is dynafold's CPU seconds per item over the ceiling's, for
	// the first --sizes run (issue 17's target: at most 0.6).
	CPURatio float64            `json:"cpu_ratio_to_ceiling,omitempty"`
	Budget   map[string]float64 `json:"budget,omitempty"`
	Faults   []faultLine        `json:"faults,omitempty"`
	// Incremental is the incremental scenario's runs.
	Incremental *incrementalFigures `json:"incremental,omitempty"`
	// ExportCPURatio is, per export line, its CPU per item over that of
	// the migrate of the same size into the no-op endpoint.
	ExportCPURatio map[string]float64 `json:"export_cpu_ratio_to_migrate,omitempty"`
}

func runCommand() *cobra.Command {
	o := options{}
	var sizes, scenarios string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the scenarios and print the figures",
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range strings.Split(sizes, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || n < itemsPerPortfolio {
					return fmt.Errorf("--sizes: %q is not a number of items", s)
				}
				o.sizes = append(o.sizes, n)
			}
			o.scenarios = map[string]bool{}
			for _, s := range strings.Split(scenarios, ",") {
				s = strings.TrimSpace(s)
				if !slices.Contains(scenarioNames, s) {
					return fmt.Errorf("--scenarios: %q is not one of %s", s, strings.Join(scenarioNames, ", "))
				}
				o.scenarios[s] = true
			}
			if o.incrementalItems != 0 && o.incrementalItems < 1000*itemsPerPortfolio {
				// 0.1% of the portfolios must be at least one.
				return fmt.Errorf("--incremental-items must be 0 or at least %d", 1000*itemsPerPortfolio)
			}
			if o.faultRepeat < 1 || o.faultItems < itemsPerPortfolio {
				return fmt.Errorf("--fault-repeat must be at least 1 and --fault-items at least %d", itemsPerPortfolio)
			}
			return run(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.bin, "bin", "bin", "directory with the dynafold and dynafold-noop binaries")
	f.StringVar(&o.repo, "repo", ".", "repository root (configs/, node_modules/)")
	f.StringVar(&o.pgDSN, "pg-dsn", os.Getenv("DYNAFOLD_TEST_PG_DSN"), "PostgreSQL server DSN")
	f.StringVar(&sizes, "sizes", "1000000,5000000", "dataset sizes in items for the no-op runs; the first is also used for the ceiling")
	f.IntVar(&o.dynalite, "dynalite-items", 1_000_000, "items to migrate into dynalite (0 to skip)")
	f.IntVar(&o.alleycat, "alleycat-readings", 1_000_000, "per-second readings of the scaled Alleycat example (0 to skip)")
	f.IntVar(&o.budgetItems, "budget-items", 100_000, "items for the provisioned-budget run (0 to skip)")
	f.IntVar(&o.budgetWCU, "budget-wcu", 5000, "simulated provisioned write capacity")
	f.IntVar(&o.partitionWCU, "partition-wcu", 1000, "simulated per-partition-key limit")
	f.IntVar(&o.writers, "writers", 8, "dynafold --writers (and the ceiling's concurrency)")
	f.IntVar(&o.readers, "concurrency", 4, "dynafold --concurrency")
	f.StringVar(&o.out, "out", "bench-results", "directory for the JSON results")
	f.StringVar(&scenarios, "scenarios", strings.Join(scenarioNames, ","),
		"scenarios to run: noop (the ceiling and the --sizes runs), alleycat, dynalite, budget, faults, incremental, export (each --sizes dataset to a directory and to s3rver)")
	f.IntVar(&o.faultItems, "fault-items", 100_000, "items to migrate into dynalite through the fault proxy, once per fault mix")
	f.IntVar(&o.faultRepeat, "fault-repeat", 1, "runs of each fault mix; the table shows the median")
	f.IntVar(&o.noopRepeat, "noop-repeat", 1, "rounds of the ceiling and the first --sizes run, taken in turn; the table and ratios show the medians")
	f.DurationVar(&o.faultLatency, "fault-latency", 5*time.Millisecond, "maximum latency the fault proxy adds to each write")
	f.IntVar(&o.incrementalItems, "incremental-items", 1_000_000, "items of the incremental scenario (full migrate, then migrate --incremental with 0.1% of rows changed, into dynalite; 0 to skip)")
	f.StringVar(&o.faultMixes, "fault-mixes", "", `only these fault mixes, by position in the table (e.g. "1,8,9"; 1 is the clean run the ratios need)`)
	return cmd
}

func run(ctx context.Context, o options) error {
	if o.pgDSN == "" {
		return fmt.Errorf("no PostgreSQL: pass --pg-dsn or set DYNAFOLD_TEST_PG_DSN (scripts/bench.sh does)")
	}
	work, err := os.MkdirTemp("", "dynafold-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	res := &results{Date: time.Now().UTC(), Command: "dynafold-bench run " + strings.Join(os.Args[2:], " ")}
	dynafold := filepath.Join(o.bin, "dynafold")
	config := filepath.Join(o.repo, "configs", "portfolios.yaml")

	if o.scenarios["noop"] {
		if err := noopRuns(ctx, o, work, dynafold, config, res); err != nil {
			return err
		}
	}
	if o.alleycat > 0 && o.scenarios["alleycat"] {
		noop, err := startServer(ctx, filepath.Join(work, "noop-alleycat.log"), filepath.Join(o.bin, "dynafold-noop"), "-addr", "{addr}")
		if err != nil {
			return err
		}
		sc, err := alleycatRun(ctx, o, work, dynafold, noop.URL)
		noop.stop()
		if err != nil {
			return err
		}
		res.Scenarios = append(res.Scenarios, *sc)
	}
	if o.dynalite > 0 && o.scenarios["dynalite"] {
		sc, err := dynaliteRun(ctx, o, work, dynafold, config)
		if err != nil {
			return err
		}
		res.Scenarios = append(res.Scenarios, *sc)
	}
	if o.budgetItems > 0 && o.scenarios["budget"] {
		sc, budget, err := budgetRun(ctx, o, work, dynafold, config)
		if err != nil {
			return err
		}
		res.Scenarios = append(res.Scenarios, *sc)
		res.Budget = budget
	}
	if o.scenarios["export"] {
		lines, err := exportRuns(ctx, o, work, dynafold, config)
		if err != nil {
			return err
		}
		res.Scenarios = append(res.Scenarios, lines...)
		res.ExportCPURatio = exportRatios(res.Scenarios)
	}
	if o.scenarios["faults"] {
		lines, err := faultRun(ctx, o, work, dynafold, config)
		if err != nil {
			return err
		}
		res.Faults = lines
	}
	if o.incrementalItems > 0 && o.scenarios["incremental"] {
		fig, err := incrementalScenario(ctx, o, work, dynafold, config)
		if err != nil {
			return err
		}
		res.Incremental = fig
	}
	print(res)
	if len(res.Faults) > 0 {
		printFaults(res.Faults, o.faultItems, o)
	}
	if res.Incremental != nil {
		printIncremental(res.Incremental)
	}
	return save(o.out, res)
}

// noopRuns measures the ceiling and dynafold at each of --sizes against
// the no-op endpoint. With --noop-repeat N the ceiling and the first size
// run N times, in turn, and the lines and ratios are the medians: on a
// shared virtual machine the speed of both drifts by a third within an
// hour, and taking them in turn keeps the drift out of the ratio.
func noopRuns(ctx context.Context, o options, work, dynafold, config string, res *results) error {
	noop, err := startServer(ctx, filepath.Join(work, "noop.log"), filepath.Join(o.bin, "dynafold-noop"), "-addr", "{addr}")
	if err != nil {
		return err
	}
	defer noop.stop()

	for i, size := range o.sizes {
		dsn, err := generate(ctx, o.pgDSN, size)
		if err != nil {
			return err
		}
		table := fmt.Sprintf("bench_%d", size)
		if err := createTable(ctx, dynafold, config, noop.URL, table); err != nil {
			return err
		}
		rounds := 1
		if i == 0 {
			rounds = max(o.noopRepeat, 1)
		}
		var ceilings, runs []scenario
		for range rounds {
			if i == 0 {
				c, err := ceilingRun(ctx, noop.URL, table, size, o.writers)
				if err != nil {
					return err
				}
				ceilings = append(ceilings, *c)
			}
			conns, err := connectionsOpened(noop.URL)
			if err != nil {
				return err
			}
			sc, err := migrate(ctx, o, work, dynafold, config, noop.URL, table, dsn, fmt.Sprintf("dynafold → no-op (%s items)", human(size)))
			if err != nil {
				return err
			}
			// Keep-alive: about one connection per writer, however many
			// requests.
			opened, err := connectionsOpened(noop.URL)
			if err != nil {
				return err
			}
			sc.Note += fmt.Sprintf(", %d connections opened", opened-conns)
			runs = append(runs, *sc)
		}
		if i == 0 {
			c, d := medianLine(ceilings), medianLine(runs)
			res.Scenarios = append(res.Scenarios, c)
			res.Ratio = d.ItemsPerSec / c.ItemsPerSec
			res.CPURatio = d.CPUPerM / c.CPUPerM
			res.Scenarios = append(res.Scenarios, d)
			continue
		}
		res.Scenarios = append(res.Scenarios, runs[0])
	}
	return nil
}

// ceilingRun runs the ceiling as a child process against endpoint.
func ceilingRun(ctx context.Context, endpoint, table string, size, writers int) (*scenario, error) {
	conns, err := connectionsOpened(endpoint)
	if err != nil {
		return nil, err
	}
	m, err := runMeasured(ctx, nil, os.Args[0], "ceiling", "--endpoint", endpoint, "--table", table,
		"--items", strconv.Itoa(size), "--writers", strconv.Itoa(writers))
	if err != nil {
		return nil, err
	}
	var c ceilingResult
	if err := json.Unmarshal([]byte(m.Stdout), &c); err != nil {
		return nil, fmt.Errorf("reading ceiling result: %w", err)
	}
	opened, err := connectionsOpened(endpoint)
	if err != nil {
		return nil, err
	}
	sc := line("ceiling: pre-built items, same SDK → no-op", c.Items, c.Seconds, m, fmt.Sprintf("%d connections opened", opened-conns))
	return &sc, nil
}

// medianLine is one line of rounds, its items/s, CPU and RSS each the
// median of the rounds (the note lists every round's items/s and CPU).
func medianLine(rounds []scenario) scenario {
	if len(rounds) == 1 {
		return rounds[0]
	}
	med := func(f func(scenario) float64) float64 {
		v := make([]float64, len(rounds))
		for i, r := range rounds {
			v[i] = f(r)
		}
		slices.Sort(v)
		if n := len(v); n%2 == 0 {
			return (v[n/2-1] + v[n/2]) / 2
		}
		return v[len(v)/2]
	}
	out := rounds[0]
	out.ItemsPerSec = med(func(r scenario) float64 { return r.ItemsPerSec })
	out.Seconds = float64(out.Items) / out.ItemsPerSec
	out.CPUPerM = med(func(r scenario) float64 { return r.CPUPerM })
	out.PeakRSSMB = med(func(r scenario) float64 { return r.PeakRSSMB })
	parts := make([]string, len(rounds))
	for i, r := range rounds {
		parts[i] = fmt.Sprintf("%.0f/s %.1f CPU-s/M", r.ItemsPerSec, r.CPUPerM)
	}
	out.Note = fmt.Sprintf("median of %d rounds (%s); last round: %s", len(rounds), strings.Join(parts, ", "), rounds[len(rounds)-1].Note)
	return out
}

func createTable(ctx context.Context, dynafold, config, endpoint, table string) error {
	// --no-source: the runs read a source of their own, not the mapping's.
	_, err := runMeasured(ctx, nil, dynafold, "table", "create", "--no-source", "--config", config, "--endpoint", endpoint, "--table", table)
	return err
}

// report is the part of dynafold's --report the benchmark reads.
type report struct {
	Summary struct {
		Total struct {
			ItemsWritten int64   `json:"items_written"`
			Seconds      float64 `json:"seconds"`
		} `json:"total"`
		Writes sink.Stats `json:"writes"`
	} `json:"summary"`
}

// migrateRun runs dynafold migrate as a child and reads its report.
func migrateRun(ctx context.Context, o options, work, dynafold, config, endpoint, table, dsn string, extra ...string) (*measured, *report, error) {
	path := filepath.Join(work, table+".report.json")
	args := append([]string{"migrate", "--config", config, "--endpoint", endpoint, "--table", table, "--source-dsn", dsn,
		"--checkpoint", filepath.Join(work, table+".checkpoint.json"), "--restart", "--progress", "none", "--report", path,
		"--writers", strconv.Itoa(o.writers), "--concurrency", strconv.Itoa(o.readers)}, extra...)
	m, err := runMeasured(ctx, nil, dynafold, args...)
	if err != nil {
		return nil, nil, err
	}
	var rep report
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, nil, err
	}
	return m, &rep, nil
}

// migrate runs dynafold migrate as a child and makes a line of its report.
func migrate(ctx context.Context, o options, work, dynafold, config, endpoint, table, dsn, name string, extra ...string) (*scenario, error) {
	m, rep, err := migrateRun(ctx, o, work, dynafold, config, endpoint, table, dsn, extra...)
	if err != nil {
		return nil, err
	}
	t := rep.Summary.Total
	note := fmt.Sprintf("%d requests, %d throttled", rep.Summary.Writes.Requests, rep.Summary.Writes.Throttled)
	sc := line(name, t.ItemsWritten, t.Seconds, m, note)
	return &sc, nil
}

func line(name string, items int64, seconds float64, m *measured, note string) scenario {
	return scenario{
		Name: name, Items: items, Seconds: seconds,
		ItemsPerSec: float64(items) / seconds,
		CPUPerM:     m.CPU / float64(items) * 1e6,
		PeakRSSMB:   float64(m.PeakRSS) / (1 << 20),
		Note:        note,
	}
}

// dynaliteRun migrates into a dynalite of its own, so that the test
// server's memory is not filled and the figure is not shared.
func dynaliteRun(ctx context.Context, o options, work, dynafold, config string) (*scenario, error) {
	dsn, err := generate(ctx, o.pgDSN, o.dynalite)
	if err != nil {
		return nil, err
	}
	dl, err := startServer(ctx, filepath.Join(work, "dynalite.log"), "node", filepath.Join(o.repo, "scripts", "dynalite.js"),
		"--host", "127.0.0.1", "--port", "{port}", "--createTableMs", "0")
	if err != nil {
		return nil, err
	}
	defer dl.stop()
	table := "bench_dynalite"
	if err := createTable(ctx, dynafold, config, dl.URL, table); err != nil {
		return nil, err
	}
	return migrate(ctx, o, work, dynafold, config, dl.URL, table, dsn, fmt.Sprintf("dynafold → dynalite (%s items)", human(o.dynalite)))
}

// budgetRun simulates a provisioned table: the no-op endpoint admits
// budgetWCU write units a second in all and partitionWCU per partition key,
// and the table declares that capacity, which dynafold reads and paces to.
func budgetRun(ctx context.Context, o options, work, dynafold, config string) (*scenario, map[string]float64, error) {
	dsn, err := generate(ctx, o.pgDSN, o.budgetItems)
	if err != nil {
		return nil, nil, err
	}
	noop, err := startServer(ctx, filepath.Join(work, "noop-budget.log"), filepath.Join(o.bin, "dynafold-noop"), "-addr", "{addr}",
		"-wcu", strconv.Itoa(o.budgetWCU), "-partition-wcu", strconv.Itoa(o.partitionWCU))
	if err != nil {
		return nil, nil, err
	}
	defer noop.stop()
	provisioned, err := provisionedConfig(work, config, o.budgetWCU)
	if err != nil {
		return nil, nil, err
	}
	table := "bench_budget"
	if err := createTable(ctx, dynafold, provisioned, noop.URL, table); err != nil {
		return nil, nil, err
	}
	sc, err := migrate(ctx, o, work, dynafold, provisioned, noop.URL, table, dsn,
		fmt.Sprintf("dynafold → no-op, %d WCU budget, %d per key (%s items)", o.budgetWCU, o.partitionWCU, human(o.budgetItems)))
	if err != nil {
		return nil, nil, err
	}
	st, err := noopStats(noop.URL)
	if err != nil {
		return nil, nil, err
	}
	var requests, throttled float64
	if _, err := fmt.Sscanf(sc.Note, "%g requests, %g throttled", &requests, &throttled); err != nil {
		return nil, nil, err
	}
	budget := map[string]float64{
		"budget_wcu":           float64(o.budgetWCU),
		"write_units_admitted": float64(st.WriteUnits),
		"run_seconds":          sc.Seconds,
		// Share of the budget used over the whole run, start-up included.
		"budget_used":        float64(st.WriteUnits) / (float64(o.budgetWCU) * sc.Seconds),
		"throttled_share":    throttled / requests,
		"throttled_requests": throttled,
		"requests":           requests,
		"steady_budget_used": steadyShare(st, o.budgetWCU),
		"unprocessed_items":  float64(st.UnprocessedItems),
		"ptee_requests":      float64(st.ThrottledRequests),
	}
	sc.Note = fmt.Sprintf("budget used %.1f%%, throttled requests %.2f%%", 100*budget["budget_used"], 100*budget["throttled_share"])
	return sc, budget, nil
}

// steadyShare is the budget used in the full seconds between the first
// and the last second that saw writes.
func steadyShare(st *noopCounters, wcu int) float64 {
	if len(st.Series) < 3 {
		return 0
	}
	inner := st.Series[1 : len(st.Series)-1]
	var units int64
	for _, s := range inner {
		units += s.WriteUnits
	}
	return float64(units) / float64(int64(wcu)*int64(len(inner)))
}

// provisionedConfig writes a copy of the mapping declaring a provisioned
// table of the budget's capacity.
func provisionedConfig(work, config string, wcu int) (string, error) {
	data, err := os.ReadFile(config)
	if err != nil {
		return "", err
	}
	s := strings.Replace(string(data), "billing: on_demand", fmt.Sprintf("billing: provisioned\n  capacity: {read: %d, write: %d}", wcu, wcu), 1)
	if s == string(data) {
		return "", fmt.Errorf("%s has no billing: on_demand line to replace", config)
	}
	path := filepath.Join(work, "provisioned.yaml")
	return path, os.WriteFile(path, []byte(s), 0o644)
}

// splitInts reads a comma-separated list of integers; what is not a number
// reads as 0, which the caller refuses as out of range.
func splitInts(list string) []int {
	var out []int
	for _, s := range strings.Split(list, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			out = append(out, n)
		} else {
			out = append(out, 0)
		}
	}
	return out
}

func human(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}

func print(r *results) {
	if len(r.Scenarios) == 0 {
		return // e.g. --scenarios incremental, which prints its own table
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tITEMS\tSECONDS\tITEMS/S\tCPU S/M ITEMS\tPEAK RSS MB\tNOTE")
	for _, s := range r.Scenarios {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.0f\t%.1f\t%.0f\t%s\n", s.Name, s.Items, s.Seconds, s.ItemsPerSec, s.CPUPerM, s.PeakRSSMB, s.Note)
	}
	tw.Flush()
	if r.Ratio > 0 {
		fmt.Printf("dynafold end to end / ceiling: %.2f\n", r.Ratio)
	}
	if r.CPURatio > 0 {
		fmt.Printf("dynafold CPU per item / ceiling's: %.2f\n", r.CPURatio)
	}
	names := make([]string, 0, len(r.ExportCPURatio))
	for n := range r.ExportCPURatio {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Printf("%s: CPU per item / migrate's (same size): %.2f\n", n, r.ExportCPURatio[n])
	}
}

func save(dir string, r *results) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, "bench-"+r.Date.Format("20060102-150405")+".json")
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	fmt.Println("results:", path)
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
