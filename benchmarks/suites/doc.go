// Package suites holds the benchmark suites that peer pool libraries published, rerun on crew,
// the peers the Go module proxy serves and the baselines of package contenders. Every
// benchmark is a plain testing benchmark named
// Benchmark<Suite>/<key>=<scenario>/task=<task>/pool=<contender>, the key being load=, or
// workers= in TaskQ, except ultrapool's, which are named
// BenchmarkUltrapool/task=<task>/par=<parallelism>/pool=<contender>. So benchstat reads the
// output (benchstat -col /pool puts the contenders side by side) and the crewbench command
// groups it. Every one counts the tasks that ran with an atomic and fails unless exactly as
// many ran as were submitted: a count, not a check of each task (see tally).
//
// Five suites rerun what peers published, each with the parameters its authors gave, and a
// sixth is crew's own:
//
//   - BenchmarkPond (alitto/pond): users submitting tasks to a pool of 200,000 workers, pool
//     creation counted, tasks time.Sleep(10ms) and rand.Float64().
//   - BenchmarkUltrapool (maurice2k/ultrapool): b.RunParallel submitters at parallelism 1, 10,
//     50 and 100; tasks sleep 1µs, SHA-256 of 1 kB, AES-128-CBC of 1 kB and of 8 kB.
//   - BenchmarkItogami (alphadose/itogami): 1M tasks sleeping 10ms on a pool of 50,000.
//   - BenchmarkTaskQ (antonmashko/taskq): b.N tasks on NumCPU workers: a small JSON
//     unmarshal, a 50ms sleep then the unmarshal, and sleeps of 1µs, 50µs, 1ms and 50ms.
//   - BenchmarkPools (johnsiilver/pools): 10,000 ECDSA P-256 key generations on NumCPU workers.
//   - BenchmarkStreams (crew's own): a sequence mapped on a bounded number of goroutines, its
//     results consumed in order or as they finish, by crew's MapSeq and MapSeqUnordered, rill,
//     conc's stream and errgroup with a results slice; named
//     BenchmarkStreams/items=<workload>/order=<order>/pool=<contender>, its contenders its own
//     rather than package contenders' Runners. It checks every result (each in order, or their
//     count and sum) and reports peak-pending, the most values pulled and not yet consumed.
//
// BenchmarkAdaptive (crew's own) sets WithAdaptiveLimit against fixed limits of a quarter, one,
// four and sixteen times the capacity C of what the tasks use: calls to a service of 16 slots
// of 2 ms that grows to 64, and AES-CBC of 8 kB with C = GOMAXPROCS; named
// BenchmarkAdaptive/load=<service or cpu>/task=<workload>/pool=<contender>, crew being the
// adaptive pool.
//
// Two scheduling benchmarks of crew's own: BenchmarkKeyed (per-key order with one slow key,
// against go-pkgz/pool's WithChunkFn and a goroutine per key) and BenchmarkPriorityLatency
// (the start latency of a high-priority sub-pool's tasks under a flood of low-priority ones).
//
// With -suites.quick (crewbench's quick run) pond's workloads, itogami's, johnsiilver/pools' and
// the streams suite's tiny values run scaled down, and are named by the sizes that ran:
// 1u-100Kt instead of 1u-1Mt, 100Kt-10Kw instead of 1Mt-50Kw, 2Kkeys instead of 10Kkeys,
// 100K-tiny instead of 1M-tiny.
//
// With -short every task count and worker count shrinks (CI runs each benchmark once that
// way) but the check of the count of tasks that ran stays.
package suites
