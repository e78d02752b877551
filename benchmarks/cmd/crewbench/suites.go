package main

import "time"

// suite describes one benchmark function of package suites: where its workloads come from and
// which of its sub-benchmarks the quick run keeps.
type suite struct {
	name   string // the -suite name and the file name of its outputs
	bench  string // the benchmark function
	title  string // a table's heading
	about  string // one sentence on the workload
	source string // the README that published the workload and its authors' figures; empty for crew's own

	// contenders are the names at the suite's pool= level, for a suite whose contenders are
	// not contenders.All; nil means contenders.All.
	contenders []string
	// metric is a unit the suite's benchmarks report besides time and memory (b.ReportMetric),
	// shown as a column of the details table; empty for none.
	metric string

	// quick is the quick run's filter of the two levels between the function and the
	// contender, in -test.bench's slash-separated form ("./." keeps all); empty means the quick
	// run leaves the suite out. The quick run also passes -suites.quick, which scales pond's,
	// itogami's and the streams' largest workloads down and names them by their smaller sizes.
	quick string
	// quickScenarios are the scenarios the quick filter keeps, as the tables name them: what
	// the README's chart shows (TestReadmeChartIsTheQuickRun).
	quickScenarios []string
	// onlyNamed keeps the suite out of the quick run unless -suite names it: its quick
	// selection alone takes minutes (the sweep, the adaptive limit's ten-second phases).
	onlyNamed bool
	// quickTime and fullTime are the -test.benchtime of each kind of run. The quick run gives
	// every suite a fixed count (1x, 50000x), so its length does not depend on go test's
	// search for b.N.
	quickTime, fullTime string
	// quickLoads, when set, splits the quick run into one job per load, each with its own
	// -test.benchtime in place of quickTime: a suite whose loads differ by orders of magnitude
	// in length (the adaptive limit's ten-second service phases and its AES tasks of
	// microseconds, of which one is no measurement) needs a count per load.
	quickLoads []quickLoad
	// quickJob is roughly how long one contender's process takes in the quick run on a quiet
	// 2-core machine: the progress line's first guess, before the run has timed that suite.
	quickJob time.Duration
}

// quickLoad is one load of a suite's quick run with its own -test.benchtime: see
// suite.quickLoads.
type quickLoad struct{ filter, benchtime string }

// suites are the suites in the order they are reported.
var suites = []suite{
	{
		name: "pond", bench: "BenchmarkPond",
		title:          "pond's workloads",
		about:          "users × tasks per user on a fresh pool of 200,000 workers (its creation measured); tasks sleep 10ms or call rand.Float64; the two middle workloads pause 10ms between one user's submissions.",
		source:         "https://github.com/alitto/pond/tree/main/benchmark",
		quick:          "^load=1u-100Kt$/.", // pond's 1u-1Mt, the workload its README charts, at a tenth
		quickScenarios: []string{"1u-100Kt/sleep10ms", "1u-100Kt/randfloat"},
		quickTime:      "1x", fullTime: "1x", quickJob: 500 * time.Millisecond,
	},
	{
		name: "ultrapool", bench: "BenchmarkUltrapool",
		title:          "ultrapool's workloads",
		about:          "b.RunParallel submitters (parallelism × GOMAXPROCS goroutines) hand one task per iteration to a pool of 10,000 workers; time is per task. The static floor runs the same tasks on 10,000 goroutines with no submitters.",
		source:         "https://github.com/maurice2k/ultrapool#benchmarks",
		quick:          "^task=(sleep1us|sha256-1kB)$/^par=100$",
		quickScenarios: []string{"sleep1us/par=100", "sha256-1kB/par=100"},
		quickTime:      "20000x", fullTime: "200ms", quickJob: 100 * time.Millisecond,
	},
	{
		name: "itogami", bench: "BenchmarkItogami",
		title:          "itogami's workload",
		about:          "one submitter, 1,000,000 tasks sleeping 10ms, a fresh pool of 50,000 workers per iteration.",
		source:         "https://github.com/alphadose/itogami#benchmarks",
		quick:          "./.", // a tenth of the tasks on a fifth of the workers: see -suites.quick
		quickScenarios: []string{"100Kt-10Kw/sleep10ms"},
		quickTime:      "1x", fullTime: "1x", quickJob: 250 * time.Millisecond,
	},
	{
		name: "taskq", bench: "BenchmarkTaskQ",
		title:          "TaskQ's workloads",
		about:          "b.N tasks on NumCPU workers; time is per task: a small JSON unmarshal, a 50ms sleep then the unmarshal, sleeps of 1µs, 50µs, 1ms and 50ms.",
		source:         "https://github.com/antonmashko/taskq/tree/master/benchmarks",
		quick:          "^workers=NumCPU$/^task=json$",
		quickScenarios: []string{"NumCPU/json"},
		quickTime:      "20000x", fullTime: "300ms", quickJob: 150 * time.Millisecond,
	},
	{
		name: "pools", bench: "BenchmarkPools",
		title:          "johnsiilver/pools' workload",
		about:          "10,000 ECDSA P-256 key generations per iteration on NumCPU workers.",
		source:         "https://github.com/johnsiilver/pools/tree/main/goroutines",
		quick:          "./.", // a fifth of the keys: see -suites.quick
		quickScenarios: []string{"2Kkeys/ecdsa-p256"},
		quickTime:      "1x", fullTime: "1x", quickJob: 150 * time.Millisecond,
	},
	{
		name: "streams", bench: "BenchmarkStreams",
		title:          "streaming maps",
		about:          "a sequence mapped on a bounded number of goroutines, its results consumed on one goroutine in input order (ordered) or as they finish (unordered): 1,000,000 values of a few nanoseconds on GOMAXPROCS workers, and 10,000 values sleeping 25 to 75 µs on 16 workers; time is per whole sequence. crew's MapSeq and MapSeqUnordered against rill's OrderedMap and Map, conc's stream (ordered in both) and errgroup with a results slice; peak-pending is the most values pulled and not yet consumed.",
		contenders:     []string{"crew", "rill", "conc", "errgroup"},
		metric:         "peak-pending",
		quick:          "./.", // the tiny values a tenth as many: see -suites.quick
		quickScenarios: []string{"100K-tiny/ordered", "100K-tiny/unordered", "10k-50us/ordered", "10k-50us/unordered"},
		quickTime:      "1x", fullTime: "5x", quickJob: 800 * time.Millisecond,
	},
	{
		name: "adaptive", bench: "BenchmarkAdaptive",
		title:      "the adaptive limit",
		about:      "crew with WithAdaptiveLimit (crew) against fixed limits of C/4, C, 4C and 16C: tasks calling a service of C = 16 slots of 2 ms, fed without pause, for 5 s, then of 64 slots for 5 s (time per task over both; c16-run-ms is the mean run time once settled), and AES-CBC of 8 kB from ten submitters per processor with C = GOMAXPROCS (the adaptive pool's ceiling 10,000).",
		contenders: adaptiveContenders,
		metric:     "c16-run-ms",
		quick:      "./.", quickTime: "1x", fullTime: "1s",
		quickLoads: []quickLoad{{"^load=service$/.", "1x"}, {"^load=cpu$/.", "20000x"}},
		onlyNamed:  true, // five contenders of two ten-second phases a pass
	},
	sweepSuite,
}

// adaptiveContenders are the adaptive suite's own: crew is the adaptive pool.
var adaptiveContenders = []string{"crew", "fixed-0.25C", "fixed-1C", "fixed-4C", "fixed-16C"}
