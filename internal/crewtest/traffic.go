package crewtest

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// Await calls src's Stats until ok holds for what it returns, failing t with the last Stats
// after 10 s. It changes nothing on the pool.
func Await(t testing.TB, src interface{ Stats() crew.Stats }, what string, ok func(crew.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := src.Stats()
		if ok(s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last Stats %+v", what, s)
		}
		time.Sleep(time.Millisecond)
	}
}

// Recv waits for a value on ch, or for ch to be closed, failing t after 10 s.
func Recv(t testing.TB, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out after 10 s waiting for %s", what)
	}
}

// Hold submits with submit a task that holds the worker that runs it, waits until it runs
// (failing t after 10 s, naming it what), and returns the channel that releases it: until
// the channel gets a value or is closed, the pool's Stats count the task as running.
func Hold(t testing.TB, what string, submit func(task func()) error) (release chan<- struct{}) {
	t.Helper()
	started, rel := make(chan struct{}), make(chan struct{})
	if err := submit(func() { started <- struct{}{}; <-rel }); err != nil {
		t.Fatal(err)
	}
	Recv(t, what, started)
	return rel
}

// Mix returns the i-th task of a mix in fours: task 1 of every four panics with nil, task 2
// calls runtime.Goexit, and the other two return. A pool counts the panic(nil) in Panicked
// (it needs a panic handler) and the Goexit in Completed.
func Mix(i int) func() {
	return func() {
		switch i % 4 {
		case 1:
			panic(nil)
		case 2:
			runtime.Goexit()
		}
	}
}

// SubmitMix submits Mix(0) to Mix(n-1) to p with Submit, one after another, and waits for p
// to finish them; p must not run a task on its submitter (CallerRuns), whose Goexit would end
// t's goroutine. For n a multiple of 4, p's Stats then count n more accepted tasks, n/4 more
// panicked and the other 3n/4 more completed.
func SubmitMix(t testing.TB, p *crew.Pool, n int) {
	t.Helper()
	for i := range n {
		if err := p.Submit(Mix(i)); err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()
}

// Go runs f on a goroutine of its own and returns a channel closed when f returns or its
// goroutine ends otherwise (by runtime.Goexit, say, of a task run on its submitter).
func Go(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return done
}

// Concurrently runs each of fns on a goroutine of its own and returns once all have
// returned (or ended their goroutines otherwise, by runtime.Goexit).
func Concurrently(fns ...func()) {
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn()
		}()
	}
	wg.Wait()
}

// Scale returns short when tests run with -short and full otherwise: the count of tasks or
// rounds a test puts on a pool.
func Scale(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

// SampledPool returns a pool of 2 workers with latency histograms sampled one task in n
// (WithLatencySample(n)) and a panic handler that drops the panics, stopped when t ends.
func SampledPool(t testing.TB, n int) *crew.Pool {
	p := crew.New(2, crew.WithLatencyHistograms(), crew.WithLatencySample(n), crew.WithPanicHandler(func(any, []byte) {}))
	t.Cleanup(p.StopAndWait)
	return p
}

// StoppedPool returns a pool of 2 workers with latency histograms that ran 10 tasks, of which
// tasks 0, 3, 6 and 9 panicked with nil, and was then stopped with StopAndWait. Its Stats say
// MaxWorkers 2, Accepted 10, Completed 6 and Panicked 4, nothing running, waiting or idle,
// and both histograms count 10; a later submit fails with ErrStopped.
func StoppedPool(t testing.TB) *crew.Pool {
	t.Helper()
	p := crew.New(2, crew.WithLatencyHistograms(), crew.WithPanicHandler(func(any, []byte) {}))
	for i := range 10 {
		if err := p.Submit(func() {
			if i%3 == 0 {
				panic(nil)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	p.StopAndWait()
	return p
}

// Watch starts n goroutines, the i-th calling the check newCheck(i) returns, again and again,
// until a call returns an error or stop is called; newCheck runs on the caller's goroutine,
// so each check can keep what it read last. stop waits until the checks have succeeded
// atLeast times in all (or one has failed), ends the goroutines, and fails t with every
// error a check returned.
func Watch(t testing.TB, n, atLeast int, newCheck func(i int) func() error) (stop func()) {
	done := make(chan struct{})
	errs := make(chan error, n)
	var passed atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		check := newCheck(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if err := check(); err != nil {
					errs <- err
					return
				}
				passed.Add(1)
				select {
				case <-done:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	return func() {
		t.Helper()
		for passed.Load() < int64(atLeast) && len(errs) == 0 {
			runtime.Gosched()
		}
		close(done)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}

// Losses are two pools that Run puts known traffic on: every way a task can be refused,
// dropped, skipped, canceled, given back, or end in a panic(nil) or a runtime.Goexit.
type Losses struct {
	// Dropping is a pool of one worker and a queue of one under DiscardOldest, with latency
	// histograms. When Run calls paused, its Stats say MaxWorkers 1, Paused, Waiting 1,
	// Running 0, Accepted 11, Completed 5 (one of them a Goexit), Panicked 2 (one a
	// panic(nil)), Rejected 1, Canceled 1, Discarded 1, Skipped 2 and CallerRan 0, and its
	// histograms count 7 tasks; once Run returns, Waiting 0 and Returned 1, the rest alike.
	Dropping *crew.Pool
	// CallerRuns is a pool of one worker and a queue of one under CallerRuns, with latency
	// histograms. After Run its Stats say MaxWorkers 1, Accepted 4, Completed 4 and
	// CallerRan 2 (one of them a Goexit), every other counter 0, and its histograms count 4.
	CallerRuns *crew.Pool
	// Panics counts the panics both pools' handlers got: 2 after Run.
	Panics atomic.Int64
	// Ran counts the counting tasks that ran: 3 after Run.
	Ran     atomic.Int64
	dropped chan func()
}

// NewLosses returns the two pools of Losses, with no traffic yet, stopped when t ends.
func NewLosses(t testing.TB) *Losses {
	l := &Losses{dropped: make(chan func(), 4)}
	l.Dropping = crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest), crew.WithLatencyHistograms(),
		crew.WithPanicHandler(func(any, []byte) { l.Panics.Add(1) }),
		crew.WithDiscardHandler(func(v any) { l.dropped <- v.(func()) }))
	t.Cleanup(l.Dropping.StopAndWait)
	l.CallerRuns = crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithLatencyHistograms(),
		crew.WithPanicHandler(func(any, []byte) { l.Panics.Add(1) }))
	t.Cleanup(l.CallerRuns.StopAndWait)
	return l
}

// Run puts the traffic counted by hand on Dropping: a task DiscardOldest dropped, a
// TrySubmit refused on a full queue, a submit with an ended context, a function skipped
// because its context ended while queued, a canceled future, and tasks that panic(nil),
// panic and call runtime.Goexit; then on CallerRuns two caller-run tasks, one of which calls
// runtime.Goexit (ending its submitter, not t's goroutine); it leaves Dropping paused
// with one task waiting while it calls paused; then StopNow, which must return that task,
// stops Dropping. The Stats it leaves are documented on Losses.
func (l *Losses) Run(t testing.TB, paused func()) {
	t.Helper()
	p, q := l.Dropping, l.CallerRuns
	count := func() { l.Ran.Add(1) }

	// DiscardOldest, a full-queue TrySubmit and an ended context.
	release := Hold(t, "the first blocker", p.Submit)
	if err := p.Submit(count); err != nil { // A, dropped next
		t.Fatal(err)
	}
	if err := p.Submit(count); err != nil { // B drops A
		t.Fatal(err)
	}
	select {
	case <-l.dropped:
	case <-time.After(10 * time.Second):
		t.Fatal("the discard handler never got the oldest task")
	}
	if p.TrySubmit(count) {
		t.Fatal("TrySubmit accepted on a full queue")
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.SubmitContext(done, count); err == nil {
		t.Fatal("SubmitContext with an ended context accepted")
	}
	release <- struct{}{}
	Await(t, p, "b1 and B", func(s crew.Stats) bool { return s.Completed == 2 })

	// A function whose context ends while it waits, and a canceled future.
	release = Hold(t, "the second blocker", p.Submit)
	ctx, cancelQueued := context.WithCancel(context.Background())
	skipped := crew.GoContext(ctx, p, func(context.Context) (int, error) { count(); return 0, nil })
	cancelQueued()
	release <- struct{}{}
	if _, err := skipped.Wait(); err == nil {
		t.Fatal("a function whose context ended while queued returned nil")
	}
	release = Hold(t, "the third blocker", p.Submit)
	f := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { count(); return 0, nil })
	if !f.Cancel() {
		t.Fatal("Cancel of a queued function reported false")
	}
	release <- struct{}{}

	// panic(nil), a panic and runtime.Goexit.
	for _, task := range []func(){
		func() { panic(nil) },
		func() { panic("crewtest: planned") },
		func() { runtime.Goexit() },
	} {
		if err := p.Submit(task); err != nil {
			t.Fatal(err)
		}
		p.Wait()
	}
	Await(t, p, "the skips and the mix", func(s crew.Stats) bool {
		return s.Skipped == 2 && s.Completed+s.Panicked == 7 && s.Running == 0 && s.Waiting == 0
	})

	// Caller-run tasks on q, one of which calls runtime.Goexit on its submitter.
	release = Hold(t, "q's blocker", q.Submit)
	if err := q.Submit(count); err != nil { // X, queued
		t.Fatal(err)
	}
	if err := q.Submit(count); err != nil { // Y, run by the caller
		t.Fatal(err)
	}
	goexited := Go(func() {
		_ = q.Submit(func() { runtime.Goexit() }) // Z, run by the caller, ends this goroutine
		t.Error("a caller-run task's runtime.Goexit did not end its submitter")
	})
	Recv(t, "the caller-run Goexit", goexited)
	release <- struct{}{}
	q.Wait()

	// A paused backlog that StopNow returns.
	p.Pause()
	if err := p.Submit(count); err != nil {
		t.Fatal(err)
	}
	paused()
	if back := p.StopNow(); len(back) != 1 {
		t.Fatalf("StopNow returned %d tasks, want the paused one", len(back))
	}
}

// KeyedLosses is a pool of one worker and a Keyed on it, with a keyed queue of two and
// WithNonBlocking, that Run puts known traffic on.
type KeyedLosses struct {
	// Pool has a panic handler that drops the panics. When Run calls paused, Pool is paused
	// and its Keyed's Stats say MaxWorkers 1, Paused, Waiting 2, Running 0, Accepted 5,
	// Completed 2 (the blocker and a Goexit), Panicked 1 (a panic(nil)), Rejected 1,
	// Canceled 1, and 0 Discarded, Skipped and CallerRan; once Run returns, Waiting 0, Idle 0
	// and Returned 2, the rest alike.
	Pool  *crew.Pool
	Keyed *crew.Keyed[string]
}

// NewKeyedLosses returns the pool and Keyed of KeyedLosses, with no traffic yet, the pool
// stopped when t ends.
func NewKeyedLosses(t testing.TB) *KeyedLosses {
	p := crew.New(1, crew.WithPanicHandler(func(any, []byte) {}))
	t.Cleanup(p.StopAndWait)
	return &KeyedLosses{Pool: p, Keyed: crew.NewKeyed[string](p, crew.WithQueueSize(2), crew.WithNonBlocking())}
}

// Run puts on Keyed a blocker, a task that panics with nil and one that calls
// runtime.Goexit, a TrySubmit refused by the full keyed queue and a SubmitContext with an
// ended context, and waits for them; then it pauses Pool and submits two more keyed tasks,
// which wait while it calls paused; last, StopNow on Pool, which must return those two, and
// Run waits until the Keyed's Stats count them as returned. The Stats it leaves are
// documented on KeyedLosses.
func (l *KeyedLosses) Run(t testing.TB, paused func()) {
	t.Helper()
	k := l.Keyed
	release := Hold(t, "the keyed blocker", func(task func()) error { return k.Submit("a", task) })
	if err := k.Submit("a", func() { panic(nil) }); err != nil {
		t.Fatal(err)
	}
	if err := k.Submit("b", func() { runtime.Goexit() }); err != nil {
		t.Fatal(err)
	}
	if k.TrySubmit("c", func() {}) {
		t.Fatal("TrySubmit accepted on a full keyed queue")
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := k.SubmitContext(done, "d", func() {}); err == nil {
		t.Fatal("SubmitContext with an ended context accepted")
	}
	release <- struct{}{}
	select {
	case <-Go(k.Wait):
	case <-time.After(10 * time.Second):
		t.Fatal("Keyed.Wait did not return within 10 s")
	}

	// A paused backlog of keyed tasks, taken out by StopNow.
	l.Pool.Pause()
	for _, key := range []string{"x", "x"} {
		if err := k.Submit(key, func() {}); err != nil {
			t.Fatal(err)
		}
	}
	paused()
	if back := l.Pool.StopNow(); len(back) != 2 {
		t.Fatalf("StopNow returned %d tasks, want the 2 keyed ones", len(back))
	}
	Await(t, l.Keyed, "the keyed tasks to be returned", func(s crew.Stats) bool { return s.Waiting == 0 })
}

// Storm is a pool with sampled latency histograms, its sub-pool and a Keyed on it, that Run
// puts a storm of submits, pauses and resizes on.
type Storm struct {
	// Root has 3 workers, a queue of 8 under DiscardOldest, latency histograms sampled one
	// task in n and a panic handler that drops the panics; it is stopped when t ends.
	Root *crew.Pool
	// Sub is Root's sub-pool of 2 workers with a non-blocking queue of 2 and latency
	// histograms sampled one task in n.
	Sub *crew.Pool
	// Keyed is on Root, with a non-blocking keyed queue of 4.
	Keyed *crew.Keyed[int]
}

// NewStorm returns the pools of a Storm with histograms sampled one task in n, no traffic
// yet.
func NewStorm(t testing.TB, n int) *Storm {
	root := crew.New(3, crew.WithQueueSize(8), crew.WithOverflow(crew.DiscardOldest), crew.WithLatencyHistograms(),
		crew.WithLatencySample(n), crew.WithPanicHandler(func(any, []byte) {}))
	t.Cleanup(root.StopAndWait)
	return &Storm{
		Root:  root,
		Sub:   root.Sub(2, crew.WithQueueSize(2), crew.WithNonBlocking(), crew.WithLatencyHistograms(), crew.WithLatencySample(n)),
		Keyed: crew.NewKeyed[int](root, crew.WithQueueSize(4), crew.WithNonBlocking()),
	}
}

// Run has three goroutines put rounds tasks of the Mix each on Root (Submit), Sub
// (TrySubmit) and Keyed (TrySubmit, on three keys) while a fourth pauses, resumes and
// resizes Root (to limits 1 to 3) and Sub (1 or 2), then calls Root.StopNow. When it
// returns Root and Sub are resumed and stopped, but tasks may still be running: wait for
// Running and Waiting to fall to 0 before reading final Stats, which then add up (accepted
// = ended) on all three; the limit of Root never exceeded 3.
func (s *Storm) Run(rounds int) {
	root, sub, keyed := s.Root, s.Sub, s.Keyed
	submitter := func(g int) func() {
		return func() {
			for i := range rounds {
				switch g {
				case 0:
					_ = root.Submit(Mix(i))
				case 1:
					_ = sub.TrySubmit(Mix(i))
				case 2:
					_ = keyed.TrySubmit(i%3, Mix(i))
				}
				if i%16 == 0 {
					runtime.Gosched()
				}
			}
		}
	}
	Concurrently(submitter(0), submitter(1), submitter(2), func() {
		for i := range rounds / 10 {
			root.Pause()
			runtime.Gosched()
			root.Resize(1 + i%3)
			sub.Pause()
			root.Resume()
			sub.Resize(1 + i%2)
			sub.Resume()
		}
	})
	root.StopNow()
}
