package crew_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/crewtest"
	"github.com/crewgo/crew/internal/racetest"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, 10*time.Second, what, cond)
}

// waitWithin polls cond until it holds, and fails t if it does not within d.
func waitWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poll(d, cond) {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

// poll calls cond until it holds or d has passed, and reports whether it held.
func poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
	return true
}

// awaitStats polls p's Stats until cond holds, against a deadline.
func awaitStats(t *testing.T, p interface{ Stats() crew.Stats }, what string, cond func(crew.Stats) bool) {
	t.Helper()
	var s crew.Stats
	if !poll(10*time.Second, func() bool { s = p.Stats(); return cond(s) }) {
		t.Fatalf("timed out waiting for %s; stats %+v", what, s)
	}
}

// awaitReturn fails t unless done is closed within 10 s, so that a call a bug makes hang
// fails the test instead of hanging it.
func awaitReturn(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	if err := within(done, what); err != nil {
		t.Fatal(err)
	}
}

// returnsWithin calls f and returns its error, failing the test if f has not returned after
// 10 s.
func returnsWithin(t *testing.T, what string, f func() error) error {
	t.Helper()
	var err error
	awaitReturn(t, what, goRun(func() { err = f() }))
	return err
}

// within waits until ch is closed; after 10 s it returns an error instead, so that a call
// made by the code under test cannot hang a test whose code is wrong.
func within(ch <-chan struct{}, what string) error {
	select {
	case <-ch:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("timed out after 10 s waiting for %s", what)
	}
}

// stillBlocked fails t if done is closed within 20 ms: what it stands for should block.
func stillBlocked(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
		t.Fatalf("%s returned, want it to block", what)
	case <-time.After(20 * time.Millisecond):
	}
}

// goRun runs f on a goroutine of its own and returns a channel closed when f returns.
func goRun(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return done
}

// together runs fn(c, i) for i = 0..each-1 on each of callers goroutines, c = 0..callers-1,
// released at once by closing one channel, and returns when all of them are done.
func together(callers, each int, fn func(c, i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	crewtest.Spawn(&wg, callers, start, func(c int) {
		for i := range each {
			fn(c, i)
		}
	})
	close(start)
	wg.Wait()
}

// blocker returns a task that blocks until release is closed, and a channel that receives
// once per task that has started.
func blocker() (task func(), started chan struct{}, release chan struct{}) {
	started = make(chan struct{}, 1024)
	release = make(chan struct{})
	return func() {
		started <- struct{}{}
		<-release
	}, started, release
}

// testPool is a Pool or a FuncPool, driven through fuzzPool's adapters (a FuncPool[func()]
// whose fn calls its argument), with Shutdown: for the guarantees the two types share.
type testPool interface {
	fuzzPool
	Shutdown(ctx context.Context) error
}

// poolKinds makes each kind of testPool.
var poolKinds = []struct {
	name string
	new  func(maxWorkers int, opts ...crew.Option) testPool
}{
	{"Pool", func(n int, opts ...crew.Option) testPool { return plainPool{crew.New(n, opts...)} }},
	{"FuncPool", func(n int, opts ...crew.Option) testPool {
		return invokePool{crew.NewFunc(n, func(f func()) { f() }, opts...)}
	}},
}

// forEachKind runs test as a parallel subtest for each of poolKinds, on a new pool of that
// kind built with maxWorkers and opts.
func forEachKind(t *testing.T, maxWorkers int, opts []crew.Option, test func(t *testing.T, p testPool)) {
	t.Helper()
	for _, k := range poolKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			test(t, k.new(maxWorkers, opts...))
		})
	}
}

// holdWorkers submits workers+queued tasks that block, and returns once workers of them run,
// the rest waiting in the queue; release lets them all return, as the end of the test does
// if the test has not. p must have exactly workers workers, and room in its queue for queued
// tasks.
func holdWorkers(t *testing.T, p fuzzPool, workers, queued int) (release func()) {
	t.Helper()
	task, started, gate := blocker()
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	for range workers + queued {
		if err := p.submit(task); err != nil {
			t.Fatalf("submit of a held task = %v", err)
		}
	}
	for range workers {
		<-started
	}
	return release
}

// parkWorkers has p's n workers run a task each at once, and waits until all n are idle.
func parkWorkers(t *testing.T, p *crew.Pool, n int) {
	t.Helper()
	holdWorkers(t, plainPool{p}, n, 0)()
	waitFor(t, "workers to park", func() bool { return crew.Parked(p) == n })
}

// fullBoundedQueue returns a pool of one worker and a queue of one, with the worker busy and
// the queue full until free is called. The pool is freed and stopped when the test ends.
func fullBoundedQueue(t *testing.T, opts ...crew.Option) (p *crew.Pool, free func()) {
	t.Helper()
	p = crew.New(1, append([]crew.Option{crew.WithQueueSize(1)}, opts...)...)
	t.Cleanup(p.StopAndWait) // cleanups run last first: after holdWorkers' release
	free = holdWorkers(t, plainPool{p}, 1, 1)
	if s := p.Stats(); s.Running != 1 || s.Waiting != 1 {
		t.Fatalf("Stats = %+v, want the worker busy and the queue of one full", s)
	}
	return p, free
}

// acceptsAll checks that p accepts n tasks through submit and n more through try, none
// refused, and returns a counter of the ones that have run. The caller keeps p's workers busy
// meanwhile, so that the tasks pile up in its queue.
func acceptsAll(t *testing.T, p fuzzPool, n int) *atomic.Int64 {
	t.Helper()
	ran := new(atomic.Int64)
	task := func() { ran.Add(1) }
	for i := range n {
		if err := p.submit(task); err != nil {
			t.Fatalf("submit %d = %v; stats %+v", i, err, p.Stats())
		}
		if !p.try(task) {
			t.Fatalf("try %d = false; stats %+v", i, p.Stats())
		}
	}
	if s := p.Stats(); s.Rejected != 0 {
		t.Fatalf("Stats = %+v, want nothing rejected", s)
	}
	return ran
}

// refusesEverySubmit checks that each way of submitting to p and f (Submit, TrySubmit,
// SubmitContext, Invoke, TryInvoke, InvokeContext) refuses with ErrStopped. task is what p is
// offered; the caller checks that it never ran, as f's function should check for its calls.
func refusesEverySubmit(t *testing.T, p *crew.Pool, f *crew.FuncPool[int], task func()) {
	t.Helper()
	if err := p.Submit(task); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("Submit = %v, want ErrStopped", err)
	}
	if p.TrySubmit(task) {
		t.Error("TrySubmit = true, want false")
	}
	if err := p.SubmitContext(context.Background(), task); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("SubmitContext = %v, want ErrStopped", err)
	}
	if err := f.Invoke(1); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("Invoke = %v, want ErrStopped", err)
	}
	if f.TryInvoke(1) {
		t.Error("TryInvoke = true, want false")
	}
	if err := f.InvokeContext(context.Background(), 1); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("InvokeContext = %v, want ErrStopped", err)
	}
}

// ranOnce fails the test unless every function counted in runs ran exactly once.
func ranOnce(t *testing.T, runs []atomic.Int32) {
	t.Helper()
	for i := range runs {
		if n := runs[i].Load(); n != 1 {
			t.Fatalf("function %d ran %d times, want 1", i, n)
		}
	}
}

// highWater tracks how many calls run at once.
type highWater struct{ running, high atomic.Int32 }

func (h *highWater) enter() {
	r := h.running.Add(1)
	for m := h.high.Load(); r > m && !h.high.CompareAndSwap(m, r); m = h.high.Load() {
	}
}

func (h *highWater) exit() { h.running.Add(-1) }

// weightMeter sums the weights of the tasks running under it and keeps the high-water mark.
type weightMeter struct {
	held, high atomic.Int64
	ran        atomic.Int64
}

// task returns a task of weight n that counts itself in m while it runs.
func (m *weightMeter) task(n int) func() {
	return func() {
		h := m.held.Add(int64(n))
		for {
			old := m.high.Load()
			if h <= old || m.high.CompareAndSwap(old, h) {
				break
			}
		}
		runtime.Gosched()
		m.held.Add(-int64(n))
		m.ran.Add(1)
	}
}

// goCall is one of the calls that run a function on a pool and report its outcome to their
// caller: [crew.Go], [crew.Group.Go] and [crew.Results.Go].
type goCall struct {
	name string
	// start runs fn through the call on p and returns what waits for it: Future.Wait,
	// Group.Wait or Results.Wait, reduced to the error.
	start func(p *crew.Pool, fn func()) (wait func() error)
}

var goCalls = []goCall{
	{"Go", func(p *crew.Pool, fn func()) func() error {
		f := crew.Go(p, func() (int, error) { fn(); return 1, nil })
		return func() error { _, err := f.Wait(); return err }
	}},
	{"Group.Go", func(p *crew.Pool, fn func()) func() error {
		g, _ := p.Group(context.Background())
		g.Go(func(context.Context) error { fn(); return nil })
		return g.Wait
	}},
	{"Results.Go", func(p *crew.Pool, fn func()) func() error {
		r, _ := crew.NewResults[int](context.Background(), p)
		r.Go(func(context.Context) (int, error) { fn(); return 1, nil })
		return func() error { _, err := r.Wait(); return err }
	}},
}

// mapSeqFunc is MapSeq or MapSeqUnordered over ints.
type mapSeqFunc func(context.Context, *crew.Pool, iter.Seq[int], func(context.Context, int) (int, error)) iter.Seq2[int, error]

// seqModes are the two orders a mapped sequence yields in.
var seqModes = []struct {
	name    string
	ordered bool
	mapSeq  mapSeqFunc
}{
	{"MapSeq", true, crew.MapSeq[int, int]},
	{"MapSeqUnordered", false, crew.MapSeqUnordered[int, int]},
}

// countTo yields 0, 1, ..., n-1.
func countTo(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}

// count returns 0, 1, ..., n-1, or an endless count if n < 0, counting the values pulled.
func count(n int, pulled *atomic.Int64) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := 0; n < 0 || i < n; i++ {
			pulled.Add(1)
			if !yield(i) {
				return
			}
		}
	}
}

func panicsWithBoom() { panic("boom") }

// panicNilValue returns what recover returns for panic(nil) under the process's GODEBUG: a
// *runtime.PanicNilError, or nil under panicnil=1.
func panicNilValue() (v any) {
	defer func() { v = recover() }()
	panic(nil)
}

// panicCase is a call that must panic with the message wantPanic.
type panicCase struct {
	name      string
	call      func()
	wantPanic string
}

// checkPanics runs each case as a subtest that fails unless its call panics with exactly its
// message.
func checkPanics(t *testing.T, cases []panicCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if got := recover(); got != tt.wantPanic {
					t.Fatalf("panic = %v, want %q", got, tt.wantPanic)
				}
			}()
			tt.call()
		})
	}
}

// must fails t at once if err is not nil.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (w lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(b)
}

// parkedWorkers counts the goroutines blocked in a worker's wait for a task.
func parkedWorkers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	parked := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "[chan receive") && strings.Contains(g, "internal/worker.(*Engine[...]).wait") {
			parked++
		}
	}
	return parked
}

// awaitGoroutines polls until no more goroutines are alive than base, against a deadline.
func awaitGoroutines(t *testing.T, what string, base int) {
	t.Helper()
	if !poll(10*time.Second, func() bool { return runtime.NumGoroutine() <= base }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%s: %d goroutines left, started with %d:\n%s", what,
			runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
	}
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// skipMemoryUnderRace skips a memory test under the race detector, whose shadow memory and
// slower tasks make heap figures meaningless; CI also runs the package without it.
func skipMemoryUnderRace(t *testing.T) {
	t.Helper()
	if racetest.Enabled {
		t.Skip("heap figures are meaningless under the race detector; run without -race")
	}
}

// bytesPerCall returns how many bytes run(n) allocates per call beyond what run(0) does, for
// n = 10,000: the least of five tries, with the collector off, since a garbage collection
// empties the pools' spare queue segments and the next segment is then allocated again. It
// runs on one processor: the spare segments are kept per processor (sync.Pool), and a segment
// given back on one and taken on another grows and drops the lists that hold them, a few kB
// now and then that are no part of a call's cost.
func bytesPerCall(run func(n int)) float64 {
	const n = 10000
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	allocated := func(n int) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		run(n)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	allocated(n) // warm up: the workers and the queue's segments exist
	best := math.Inf(1)
	for range 5 {
		best = min(best, float64(allocated(n)-allocated(0))/n)
	}
	return best
}

// allocsPerItem returns how many more times run(n) allocates per extra item than run(0):
// the cost of an item, without the fixed cost of the call.
func allocsPerItem(t *testing.T, run func(n int)) float64 {
	t.Helper()
	const n = 1000
	run(n) // warm the pool up: its workers exist
	none := testing.AllocsPerRun(20, func() { run(0) })
	many := testing.AllocsPerRun(20, func() { run(n) })
	t.Logf("%.0f allocations for no items, %.0f for %d", none, many, n)
	return (many - none) / n
}

// checkRan fails the benchmark unless want tasks ran.
func checkRan(b *testing.B, ran *atomic.Int64, want int) {
	b.Helper()
	if got := ran.Load(); got != int64(want) {
		b.Fatalf("%d of %d tasks ran", got, want)
	}
}

// stressSize returns the number of submitters and of tasks per submitter in one round.
// -short and the race detector scale the counts down; the checks stay the same.
func stressSize() (submitters, perSubmitter int) {
	submitters, perSubmitter = 64, 10000
	if racetest.Enabled {
		perSubmitter = 1000
	}
	if testing.Short() {
		perSubmitter = 200
	}
	return submitters, perSubmitter
}

// limitGauge proves a limit that changes at run time was never exceeded. The resizer stores
// the new limit before a growing Resize, and after a shrinking one once no more tasks than the
// new limit run: Resize returns at once, and the tasks already running may finish above it,
// but no task starts while that many or more run. So at every moment the stored limit is at
// least the one the pool promises.
type limitGauge struct {
	limit   atomic.Int64
	running atomic.Int64
	high    atomic.Int64 // the worst excess seen: running - limit
}

func (g *limitGauge) enter() {
	before := g.limit.Load()
	cur := g.running.Add(1)
	after := g.limit.Load()
	if excess := cur - max(before, after); excess > 0 {
		for {
			h := g.high.Load()
			if excess <= h || g.high.CompareAndSwap(h, excess) {
				break
			}
		}
	}
}

func (g *limitGauge) leave() { g.running.Add(-1) }

// resize changes p's limit to n, keeping the gauge's limit at or above the promised one.
func (g *limitGauge) resize(p *crew.Pool, n int) {
	if int64(n) >= g.limit.Load() {
		g.limit.Store(int64(n))
		p.Resize(n)
		return
	}
	p.Resize(n)
	for p.Stats().Running > n {
		runtime.Gosched()
	}
	g.limit.Store(int64(n))
}

// statsWatcher checks snapshots taken while a round runs: counters never go backwards,
// Completed+Panicked never exceeds Accepted, Running never exceeds the highest limit the
// pool may have had, ceiling (it may exceed MaxWorkers after a shrinking Resize, while the
// tasks started before it finish).
func watchStats(t *testing.T, what string, p *crew.Pool, ceiling int, done <-chan struct{}) <-chan error {
	errc := make(chan error, 1)
	go func() {
		var prev crew.Stats
		for {
			s := p.Stats()
			var err error
			switch {
			case s.Completed+s.Panicked > s.Accepted:
				err = errors.New("Completed+Panicked > Accepted")
			case s.Running > ceiling:
				err = errors.New("Running above every limit the pool had")
			case s.Accepted < prev.Accepted, s.Completed < prev.Completed,
				s.Panicked < prev.Panicked, s.Rejected < prev.Rejected,
				s.Canceled < prev.Canceled:
				err = errors.New("a counter went backwards")
			case s.Running < 0 || s.Idle < 0 || s.Waiting < 0:
				err = errors.New("a negative gauge")
			}
			if err != nil {
				t.Errorf("%s: stats %+v after %+v: %v", what, s, prev, err)
				errc <- err
				return
			}
			prev = s
			select {
			case <-done:
				errc <- nil
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	return errc
}

// checkFinalStats checks a stopped, drained pool's snapshot.
func checkFinalStats(t *testing.T, what string, s crew.Stats) {
	t.Helper()
	if s.Completed+s.Panicked+s.Skipped != s.Accepted || s.Running != 0 || s.Idle != 0 || s.Waiting != 0 {
		t.Fatalf("%s: stats after StopAndWait do not add up: %+v", what, s)
	}
}

// endless yields 0, 1, 2, ... until the consumer stops, counting what it yielded.
func endless(pulled *atomic.Int64) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := 0; ; i++ {
			pulled.Add(1)
			if !yield(i) {
				return
			}
		}
	}
}

// idleIdentity fails t unless s, a snapshot of an idle pool or Keyed, has nothing running or
// waiting and accounts for every accepted task once: Accepted = Completed + Panicked +
// Discarded + Returned + Skipped.
func idleIdentity(t *testing.T, what string, s crew.Stats) {
	t.Helper()
	if ended := s.Completed + s.Panicked + s.Discarded + s.Returned + s.Skipped; s.Accepted != ended ||
		s.Running != 0 || s.Waiting != 0 {
		t.Fatalf("%s: %+v: Accepted %d, but Completed+Panicked+Discarded+Returned+Skipped %d, or tasks still running or waiting",
			what, s, s.Accepted, ended)
	}
}

// repeatUntil calls f in a loop on a goroutine of its own, counted in wg, until stop is
// closed: a storm of one operation beside others.
func repeatUntil(wg *sync.WaitGroup, stop <-chan struct{}, f func()) {
	crewtest.Repeat(wg, stop, func(int) { f() })
}

// pauseStorm pauses one of pools, picked at random, for d and then leaves it running for d,
// over and over on a goroutine counted in wg, until stop is closed. The gap after Resume
// matters: without it, a sub-pool whose parent and itself take turns being paused may never
// find both running, and its tasks wait for the storm to end.
func pauseStorm(wg *sync.WaitGroup, stop <-chan struct{}, d time.Duration, pools ...*crew.Pool) {
	repeatUntil(wg, stop, func() {
		p := pools[rand.IntN(len(pools))]
		p.Pause()
		time.Sleep(d)
		p.Resume()
		time.Sleep(d)
	})
}

// keyChecker records per-key order and one-at-a-time, and that each keyed task runs once.
type keyChecker struct {
	mu     sync.Mutex
	next   map[int]int // key -> next expected seq
	inside map[int]bool
	runs   map[[2]int]int
	errs   []string
}

func newKeyChecker() *keyChecker {
	return &keyChecker{next: map[int]int{}, inside: map[int]bool{}, runs: map[[2]int]int{}}
}

func (c *keyChecker) enter(key, seq int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inside[key] {
		c.errs = append(c.errs, fmt.Sprintf("key %d: task %d started while another of the key ran", key, seq))
	}
	c.inside[key] = true
	c.runs[[2]int{key, seq}]++
	if c.runs[[2]int{key, seq}] > 1 {
		c.errs = append(c.errs, fmt.Sprintf("key %d task %d ran twice", key, seq))
	}
	if seq < c.next[key] {
		c.errs = append(c.errs, fmt.Sprintf("key %d: task %d started after task %d", key, seq, c.next[key]-1))
	}
	c.next[key] = seq + 1
}

func (c *keyChecker) exit(key int) {
	c.mu.Lock()
	c.inside[key] = false
	c.mu.Unlock()
}

// ranCount is how many distinct keyed tasks have run.
func (c *keyChecker) ranCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.runs)
}

// check fails t if a keyed task broke the order, ran beside another of its key, or ran twice.
func (c *keyChecker) check(t *testing.T, what string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.errs) > 0 {
		t.Fatalf("%s: %d order faults, the first ones: %q", what, len(c.errs), c.errs[:min(8, len(c.errs))])
	}
}

// countersWentBack reports whether a counter of Stats is lower in s than in prev, an earlier
// snapshot of the same pool: none ever goes down.
func countersWentBack(s, prev crew.Stats) bool {
	return s.Accepted < prev.Accepted || s.Completed < prev.Completed || s.Panicked < prev.Panicked ||
		s.Skipped < prev.Skipped || s.Returned < prev.Returned || s.Discarded < prev.Discarded ||
		s.CallerRan < prev.CallerRan || s.Rejected < prev.Rejected || s.Canceled < prev.Canceled
}
