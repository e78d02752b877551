package crew_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"log"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// panicLog collects what a pool's panic handler receives.
type panicLog struct {
	mu     sync.Mutex
	values []any
}

func (l *panicLog) handler(v any, _ []byte) {
	l.mu.Lock()
	l.values = append(l.values, v)
	l.mu.Unlock()
}

func (l *panicLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.values)
}

func (l *panicLog) has(v any) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.values {
		if x == v {
			return true
		}
	}
	return false
}

// seqPool is a pool and a sub-pool of a sub-pool of it, on which the sequence tests run.
func seqPools(t *testing.T) map[string]*crew.Pool {
	t.Helper()
	root := advCbPool(t, 4)
	mid := root.Sub(3, crew.WithPriority(1))
	leaf := mid.Sub(2)
	return map[string]*crew.Pool{"root": root, "subsub": leaf}
}

// advCbPool returns a pool of n workers stopped and waited for when t ends.
func advCbPool(t *testing.T, n int, opts ...crew.Option) *crew.Pool {
	t.Helper()
	p := crew.New(n, opts...)
	t.Cleanup(p.StopAndWait)
	return p
}

// misbehavingSeq yields n values and then does what bad says: panic with a value,
// panic(nil), or runtime.Goexit.
func misbehavingSeq(n int, bad func()) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
		bad()
	}
}

// callTracker is an fn for ForEach and MapSeq that blocks until its context ends, and counts
// the calls started and ended.
type callTracker struct {
	started, ended atomic.Int64
	allIn          chan struct{}
	want           int64
}

func newCallTracker(want int) *callTracker {
	return &callTracker{allIn: make(chan struct{}), want: int64(want)}
}

func (c *callTracker) fn(ctx context.Context, x int) (int, error) {
	if c.started.Add(1) == c.want {
		close(c.allIn)
	}
	defer c.ended.Add(1)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
	}
	return x, nil
}

// TestAdvCallbackSequencePanicGoesToTheCallerAfterEveryCall attacks "If in itself panics (or
// calls runtime.Goexit), ForEach cancels the calls' context, waits for the calls in flight,
// and lets the panic go on" and MapSeq's "A panic goes on unwinding from the range statement
// once the calls have returned", on a pool and on a sub-pool of a sub-pool, with a value,
// with panic(nil) and with runtime.Goexit.
func TestAdvCallbackSequencePanicGoesToTheCallerAfterEveryCall(t *testing.T) {
	type ender struct {
		name   string
		bad    func(gate <-chan struct{}) func()
		goexit bool
		want   any
	}
	enders := []ender{
		{"panic", func(gate <-chan struct{}) func() { return func() { <-gate; panic("seq boom") } }, false, "seq boom"},
		{"panicnil", func(gate <-chan struct{}) func() { return func() { <-gate; panic(nil) } }, false, nil},
		{"goexit", func(gate <-chan struct{}) func() { return func() { <-gate; runtime.Goexit() } }, true, nil},
	}
	// One value: W is at least 2 on every pool here, so MapSeq pulls again while the
	// call for it runs, and the sequence misbehaves with that call in flight.
	const n = 1
	for pname, p := range seqPools(t) {
		for _, e := range enders {
			for _, door := range []string{"ForEach", "MapSeq", "MapSeqUnordered"} {
				t.Run(pname+"/"+e.name+"/"+door, func(t *testing.T) {
					tr := newCallTracker(n)
					in := misbehavingSeq(n, e.bad(tr.allIn))
					var recovered any
					var panicked, normal bool
					var endedAtUnwind int64
					done := goRun(func() {
						defer func() {
							endedAtUnwind = tr.ended.Load()
							if !normal {
								recovered = recover()
								panicked = true
							}
						}()
						ctx := context.Background()
						switch door {
						case "ForEach":
							_ = crew.ForEach(ctx, p, in, func(ctx context.Context, x int) error {
								_, err := tr.fn(ctx, x)
								return err
							})
						case "MapSeq":
							for range crew.MapSeq(ctx, p, in, tr.fn) {
							}
						default:
							for range crew.MapSeqUnordered(ctx, p, in, tr.fn) {
							}
						}
						normal = true
					})
					awaitReturn(t, door+" with a misbehaving sequence", done)
					if normal {
						t.Fatalf("%s returned normally; want the sequence's %s to go on", door, e.name)
					}
					if endedAtUnwind != n {
						t.Fatalf("%d of %d calls had ended when the %s reached the caller", endedAtUnwind, n, e.name)
					}
					if !e.goexit {
						want := e.want
						if e.name == "panicnil" {
							want = panicNilValue()
						}
						if _, ok := want.(*runtime.PanicNilError); ok {
							if _, ok := recovered.(*runtime.PanicNilError); !ok {
								t.Fatalf("recovered %v (%T), want a *runtime.PanicNilError", recovered, recovered)
							}
						} else if recovered != want {
							t.Fatalf("recovered %v, want %v", recovered, want)
						}
					} else if recovered != nil || !panicked {
						t.Fatalf("goexit: recovered %v, want nil", recovered)
					}
					p.Wait()
					idleIdentity(t, pname, p.Stats())
				})
			}
		}
	}
}

// TestAdvCallbackSequenceYieldingAfterFalseStartsNoCall attacks ForEach's "It stops pulling
// at the first error" and MapSeq's "when the range statement ends, however it ends, no call
// started by it is still running", with a sequence that ignores yield's false and goes on
// yielding.
func TestAdvCallbackSequenceYieldingAfterFalseStartsNoCall(t *testing.T) {
	stubborn := func(yields *atomic.Int64) iter.Seq[int] {
		return func(yield func(int) bool) {
			for i := range 50 {
				yields.Add(1)
				yield(i)
			}
		}
	}
	for pname, p := range seqPools(t) {
		t.Run(pname+"/ForEach", func(t *testing.T) {
			var yields, calls, running atomic.Int64
			failure := errors.New("first")
			var leftRunning int64 = -1
			var err error
			done := goRun(func() {
				defer func() {
					// Go's range-over-func check may panic at a yield after false: that is
					// in panicking, and the calls must be over when it reaches the caller.
					leftRunning = running.Load()
					_ = recover()
				}()
				err = crew.ForEach(context.Background(), p, stubborn(&yields), func(ctx context.Context, x int) error {
					running.Add(1)
					defer running.Add(-1)
					calls.Add(1)
					if x == 0 {
						return failure
					}
					time.Sleep(time.Millisecond)
					return nil
				})
			})
			awaitReturn(t, "ForEach", done)
			if leftRunning != 0 {
				t.Fatalf("%d calls still running when ForEach ended", leftRunning)
			}
			after := calls.Load()
			p.Wait()
			if calls.Load() != after {
				t.Fatalf("calls ran after ForEach returned: %d then %d", after, calls.Load())
			}
			if err != nil && !errors.Is(err, failure) {
				t.Fatalf("ForEach = %v, want the first error", err)
			}
			idleIdentity(t, pname, p.Stats())
		})
		t.Run(pname+"/MapSeq", func(t *testing.T) {
			var yields, calls, running atomic.Int64
			var leftRunning int64 = -1
			func() {
				done := goRun(func() {
					defer func() { leftRunning = running.Load(); _ = recover() }()
					for range crew.MapSeq(context.Background(), p, stubborn(&yields), func(ctx context.Context, x int) (int, error) {
						running.Add(1)
						defer running.Add(-1)
						calls.Add(1)
						time.Sleep(time.Millisecond)
						return x, nil
					}) {
						break
					}
				})
				awaitReturn(t, "range with break", done)
			}()
			if leftRunning != 0 {
				t.Fatalf("%d calls still running when the range ended", leftRunning)
			}
			after := calls.Load()
			p.Wait()
			if calls.Load() != after {
				t.Fatalf("calls started after the range ended: %d then %d", after, calls.Load())
			}
			idleIdentity(t, pname, p.Stats())
		})
	}
}

// TestAdvCallbackSequenceRangedTwicePullsAnew attacks "Each range over the sequence pulls in
// anew and calls fn again", with two ranges at once over one MapSeq on a sub-pool of a
// sub-pool.
func TestAdvCallbackSequenceRangedTwicePullsAnew(t *testing.T) {
	p := seqPools(t)["subsub"]
	var pulls atomic.Int64
	in := func(yield func(int) bool) {
		pulls.Add(1)
		for i := range 20 {
			if !yield(i) {
				return
			}
		}
	}
	for _, mk := range []func(context.Context, *crew.Pool, iter.Seq[int], func(context.Context, int) (int, error)) iter.Seq2[int, error]{
		crew.MapSeq[int, int], crew.MapSeqUnordered[int, int],
	} {
		pulls.Store(0)
		seq := mk(context.Background(), p, in, func(_ context.Context, x int) (int, error) { return x * 2, nil })
		sums := make([]int, 2)
		var wg sync.WaitGroup
		for r := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for v, err := range seq {
					if err != nil {
						t.Error(err)
						return
					}
					sums[r] += v
				}
			}()
		}
		awaitReturn(t, "two ranges", goRun(wg.Wait))
		if sums[0] != 380 || sums[1] != 380 || pulls.Load() != 2 {
			t.Fatalf("sums %v, pulls %d; want 380 each and 2 pulls", sums, pulls.Load())
		}
	}
	p.Wait()
	idleIdentity(t, "subsub", p.Stats())
}

// TestAdvCallbackSequenceWatchingCtxReturnsCtxErr attacks ForEach's "returns ... ctx.Err() if
// ctx ended first and no call failed" and MapSeq's "(zero, ctx.Err()) is yielded last", with
// a sequence that blocks until ctx ends and then yields once more.
func TestAdvCallbackSequenceWatchingCtxReturnsCtxErr(t *testing.T) {
	for pname, p := range seqPools(t) {
		t.Run(pname, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			firstCtx := make(chan context.Context, 1)
			blocking := func(yield func(int) bool) {
				if !yield(1) {
					return
				}
				<-ctx.Done()
				<-(<-firstCtx).Done() // see callCtx below
				yield(2)              // a value pulled after ctx ended is never called
			}
			var once sync.Once
			ran := make(chan struct{})
			fn := func(ctx context.Context, x int) (int, error) {
				if x == 2 {
					t.Error("fn called for a value pulled after ctx ended")
				}
				once.Do(func() { firstCtx <- ctx; close(ran) })
				return x, nil
			}
			go func() {
				<-ran
				cancel()
			}()
			err := returnsWithin(t, "ForEach", func() error {
				return crew.ForEach(ctx, p, blocking, func(ctx context.Context, x int) error {
					_, err := fn(ctx, x)
					return err
				})
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("ForEach = %v, want context.Canceled", err)
			}
			ctx2, cancel2 := context.WithCancel(context.Background())
			defer cancel2()
			// The context the first call received: the standard library closes ctx2's Done
			// before it cancels the contexts derived from it, and that moment is
			// TestAdvCallbackSequenceValueAfterCtxEndedIsNotCalled's.
			callCtx := make(chan context.Context, 1)
			blocking2 := func(yield func(int) bool) {
				if !yield(1) {
					return
				}
				<-ctx2.Done()
				<-(<-callCtx).Done()
				yield(2)
			}
			var last error
			var got []int
			done := goRun(func() {
				for v, err := range crew.MapSeq(ctx2, p, blocking2, func(ctx context.Context, x int) (int, error) {
					if x == 2 {
						t.Error("MapSeq called fn for a value pulled after ctx ended")
					}
					// in runs on the ranging goroutine, so the end of ctx comes from here.
					callCtx <- ctx
					cancel2()
					return x, nil
				}) {
					if err != nil {
						last = err
						continue
					}
					got = append(got, v)
				}
			})
			awaitReturn(t, "MapSeq", done)
			if !errors.Is(last, context.Canceled) || len(got) != 1 {
				t.Fatalf("MapSeq yielded %v then %v, want [1] then context.Canceled", got, last)
			}
			p.Wait()
			idleIdentity(t, pname, p.Stats())
		})
	}
}

// TestAdvCallbackSequenceYieldingFromAnotherGoroutine attacks "no call outlives ForEach" and
// exactly-once with a sequence that calls yield from a goroutine of its own (waiting for it
// before it returns), given to ForEach, MapSeq and MapSeqUnordered.
func TestAdvCallbackSequenceYieldingFromAnotherGoroutine(t *testing.T) {
	for pname, p := range seqPools(t) {
		t.Run(pname, func(t *testing.T) {
			in := func(yield func(int) bool) {
				done := make(chan struct{})
				go func() {
					defer close(done)
					for i := range 30 {
						if !yield(i) {
							return
						}
					}
				}()
				<-done
			}
			var seen [30]atomic.Int32
			err := returnsWithin(t, "ForEach", func() error {
				return crew.ForEach(context.Background(), p, in, func(_ context.Context, x int) error {
					seen[x].Add(1)
					return nil
				})
			})
			must(t, err)
			ranOnce(t, seen[:])
			for _, mk := range []func(context.Context, *crew.Pool, iter.Seq[int], func(context.Context, int) (int, error)) iter.Seq2[int, error]{
				crew.MapSeq[int, int], crew.MapSeqUnordered[int, int],
			} {
				var again [30]atomic.Int32
				var got []int
				awaitReturn(t, "a range", goRun(func() {
					for v, err := range mk(context.Background(), p, in, func(_ context.Context, x int) (int, error) {
						again[x].Add(1)
						return x, nil
					}) {
						if err != nil {
							t.Error(err)
							return
						}
						got = append(got, v)
					}
				}))
				ranOnce(t, again[:])
				if len(got) != 30 {
					t.Fatalf("a range yielded %d results, want 30", len(got))
				}
			}
			p.Wait()
			idleIdentity(t, pname, p.Stats())
		})
	}
}

// misbehaviour is what a user's function does instead of returning.
type misbehaviour struct {
	name string
	do   func()
}

var advMisbehaviours = []misbehaviour{
	{"panic", func() { panic("callback boom") }},
	{"panicnil", func() { panic(nil) }},
	{"goexit", runtime.Goexit},
}

// quietDefaultLog sends the log package's output, which slog's default logger and so crew's
// default panic handler use, to a buffer until t ends, and returns a function that reports
// what was written.
func quietDefaultLog(t *testing.T) func() string {
	t.Helper()
	var buf bytes.Buffer
	var mu sync.Mutex
	out, flags := log.Writer(), log.Flags()
	log.SetOutput(lockedWriter{&mu, &buf})
	t.Cleanup(func() {
		log.SetOutput(out)
		log.SetFlags(flags)
	})
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

// TestAdvCallbackPanicHandlerMisbehavingOnSubSubPoolLosesNoTask attacks "A panic handler that
// panics: reported through the default handler; the worker survives" and "A task or a panic
// handler that calls runtime.Goexit ends its worker's goroutine; the task counts as ...
// panicked, from the handler, and a new worker takes the worker's place", on a sub-pool of a
// priority sub-pool, with plain and keyed tasks: every task runs once, keys keep their order,
// and every level's Stats add up once idle.
func TestAdvCallbackPanicHandlerMisbehavingOnSubSubPoolLosesNoTask(t *testing.T) {
	for _, m := range advMisbehaviours {
		t.Run(m.name, func(t *testing.T) {
			logged := quietDefaultLog(t)
			var handled atomic.Int64
			root := crew.New(2, crew.WithMinWorkers(1))
			defer root.StopAndWait()
			mid := root.Sub(2, crew.WithPriority(1))
			sibling := root.Sub(1)
			leaf := mid.Sub(2, crew.WithPanicHandler(func(any, []byte) {
				handled.Add(1)
				m.do()
			}))
			k := crew.NewKeyed[int](leaf)
			const n = 20
			var runs [n]atomic.Int32
			var keyed [n]atomic.Int32
			var sib atomic.Int32
			checker := newKeyChecker()
			for i := range n {
				must(t, leaf.Submit(func() {
					runs[i].Add(1)
					if i%2 == 0 {
						panic(i)
					}
				}))
				must(t, k.Submit(i%3, func() {
					checker.enter(i%3, i)
					defer checker.exit(i % 3)
					keyed[i].Add(1)
					if i%4 == 0 {
						panic("keyed")
					}
				}))
				must(t, sibling.Submit(func() { sib.Add(1) }))
			}
			awaitReturn(t, "root.Wait", goRun(root.Wait))
			awaitReturn(t, "k.Wait", goRun(k.Wait))
			ranOnce(t, runs[:])
			ranOnce(t, keyed[:])
			checker.check(t, "keyed tasks on the leaf")
			if sib.Load() != n {
				t.Fatalf("sibling ran %d of %d", sib.Load(), n)
			}
			const panics = n/2 + n/4
			if handled.Load() != panics {
				t.Fatalf("leaf handler called %d times, want %d", handled.Load(), panics)
			}
			if s := leaf.Stats(); s.Panicked != n/2 {
				t.Fatalf("leaf Stats %+v: Panicked %d, want %d", s, s.Panicked, n/2)
			}
			if s := k.Stats(); s.Panicked != n/4 || s.Completed != n-n/4 {
				t.Fatalf("keyed Stats %+v: want %d panicked, %d completed", s, n/4, n-n/4)
			}
			for name, p := range map[string]interface{ Stats() crew.Stats }{"root": root, "mid": mid, "leaf": leaf, "sibling": sibling, "keyed": k} {
				idleIdentity(t, name, p.Stats())
			}
			if m.name != "goexit" {
				waitFor(t, "the default handler's log of the handler's panic", func() bool {
					return strings.Contains(logged(), "callback boom") || strings.Contains(logged(), "nil")
				})
			}
			awaitStats(t, root, "the minimum worker back", func(s crew.Stats) bool { return s.Idle >= 1 })
			// The pool goes on serving after its workers were replaced.
			done := make(chan struct{})
			must(t, leaf.Submit(func() { close(done) }))
			awaitReturn(t, "a task after the misbehaviour", done)
		})
	}
}

// TestAdvCallbackDiscardHandlerMisbehaving attacks WithDiscardHandler's "A handler that panics
// is reported to the panic handler and the submit still returns nil", and, for a handler that
// calls runtime.Goexit, that the task that took the dropped one's place was accepted and runs
// once, on a pool and on a sub-pool of a sub-pool with its own bounded queue.
func TestAdvCallbackDiscardHandlerMisbehaving(t *testing.T) {
	for _, where := range []string{"root", "subsub"} {
		for _, m := range advMisbehaviours {
			t.Run(where+"/"+m.name, func(t *testing.T) {
				var handlerGot atomic.Value
				var discarded atomic.Int32
				var panics panicLog
				handler := func(v any) {
					discarded.Add(1)
					if _, ok := v.(func()); !ok {
						t.Errorf("discard handler got %T, want the func() submitted", v)
					}
					handlerGot.Store(true)
					m.do()
				}
				opts := []crew.Option{crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest),
					crew.WithDiscardHandler(handler), crew.WithPanicHandler(panics.handler)}
				var root, p *crew.Pool
				if where == "root" {
					root = crew.New(1, opts...)
					p = root
				} else {
					root = crew.New(1, crew.WithPanicHandler(panics.handler))
					p = root.Sub(1, crew.WithPriority(2)).Sub(1, opts...)
				}
				defer root.StopAndWait()
				task, started, release := blocker()
				must(t, p.Submit(task))
				<-started
				var oldest, newest atomic.Int32
				must(t, p.Submit(func() { oldest.Add(1) }))
				var err error = errors.New("submit did not return")
				returned := false
				awaitReturn(t, "the submit that drops", goRun(func() {
					err = p.Submit(func() { newest.Add(1) })
					returned = true
				}))
				if m.name == "goexit" {
					if returned {
						t.Fatal("the submitter returned from a discard handler that called Goexit")
					}
				} else if err != nil {
					t.Fatalf("Submit = %v, want nil after a panicking discard handler", err)
				}
				close(release)
				awaitReturn(t, "Wait", goRun(root.Wait))
				if oldest.Load() != 0 || newest.Load() != 1 || discarded.Load() != 1 {
					t.Fatalf("oldest ran %d, newest ran %d, discarded %d; want 0, 1, 1",
						oldest.Load(), newest.Load(), discarded.Load())
				}
				switch m.name {
				case "panic":
					if !panics.has("callback boom") {
						t.Fatalf("panic handler got %v, want the discard handler's panic", panics.values)
					}
				case "panicnil":
					if panics.len() != 1 {
						t.Fatalf("panic handler got %v, want the discard handler's panic(nil)", panics.values)
					}
				}
				s := p.Stats()
				if s.Discarded != 1 || s.Accepted != 3 {
					t.Fatalf("Stats %+v: want 3 accepted, 1 discarded", s)
				}
				idleIdentity(t, where, s)
				idleIdentity(t, "root", root.Stats())
			})
		}
	}
}

// TestAdvCallbackDiscardHandlerCallsBackIntoThePool attacks "It runs on the submitter ...
// with no lock of the pool held": a handler that calls Stats, Resize, Pause/Resume, TrySubmit,
// Submit or StopNow on its own pool neither deadlocks nor loses or doubles a task.
func TestAdvCallbackDiscardHandlerCallsBackIntoThePool(t *testing.T) {
	type call struct {
		name string
		do   func(p *crew.Pool, extra func()) []func()
	}
	calls := []call{
		{"Stats", func(p *crew.Pool, _ func()) []func() { _ = p.Stats(); return nil }},
		{"Resize", func(p *crew.Pool, _ func()) []func() { p.Resize(3); return nil }},
		{"PauseResume", func(p *crew.Pool, _ func()) []func() { p.Pause(); p.Resume(); return nil }},
		{"TrySubmit", func(p *crew.Pool, extra func()) []func() { p.TrySubmit(extra); return nil }},
		{"Stop", func(p *crew.Pool, _ func()) []func() { p.Stop(); return nil }},
		{"StopNow", func(p *crew.Pool, _ func()) []func() { return p.StopNow() }},
	}
	for _, where := range []string{"root", "subsub"} {
		for _, c := range calls {
			t.Run(where+"/"+c.name, func(t *testing.T) {
				var p *crew.Pool
				var ran atomic.Int32
				var handedBack []func()
				var inHandler atomic.Int32
				extra := func() { ran.Add(1) }
				handler := func(any) {
					if inHandler.Add(1) == 1 {
						handedBack = append(handedBack, c.do(p, extra)...)
					}
				}
				opts := []crew.Option{crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest), crew.WithDiscardHandler(handler)}
				root := crew.New(1, opts...)
				p = root
				if where == "subsub" {
					root = crew.New(2)
					p = root.Sub(1, crew.WithPriority(1)).Sub(1, opts...)
				}
				defer root.StopAndWait()
				task, started, release := blocker()
				must(t, p.Submit(task))
				<-started
				must(t, p.Submit(func() { t.Error("the dropped task ran") }))
				var err error
				awaitReturn(t, "the submit whose discard handler calls back", goRun(func() { err = p.Submit(extra) }))
				must(t, err)
				close(release)
				awaitReturn(t, "Wait", goRun(root.Wait))
				accepted := p.Stats().Accepted
				if got := int(ran.Load()) + len(handedBack); uint64(got)+2 != accepted {
					t.Fatalf("ran %d + handed back %d, want %d accepted minus the blocker and the dropped one",
						ran.Load(), len(handedBack), accepted)
				}
				idleIdentity(t, where, p.Stats())
				idleIdentity(t, "root", root.Stats())
			})
		}
	}
}

// subSubTree is a pool, a priority sub-pool of it, and a sub-pool of that with opts.
func subSubTree(t *testing.T, opts ...crew.Option) (root, mid, leaf *crew.Pool) {
	t.Helper()
	root = crew.New(3)
	t.Cleanup(root.StopAndWait)
	mid = root.Sub(3, crew.WithPriority(1))
	leaf = mid.Sub(2, opts...)
	return root, mid, leaf
}

// TestAdvCallbackHookMisbehavingOnSubSubPoolAccountsEveryTask attacks the Hooks promises on
// a sub-pool of a priority sub-pool: a panicking hook (any value, nil) goes to the panic
// handler and its task runs exactly once; a Queued hook's Goexit ends the submitter and the
// task is not accepted and never runs; a Started hook's Goexit keeps its task from running and
// it counts as completed; a Finished hook's Goexit leaves the outcome standing. Every hook
// misbehaves on every other call, submits come from many goroutines, and every level's Stats
// add up once idle.
func TestAdvCallbackHookMisbehavingOnSubSubPoolAccountsEveryTask(t *testing.T) {
	for _, hook := range []string{"Queued", "Started", "Finished"} {
		for _, m := range advMisbehaviours {
			t.Run(hook+"/"+m.name, func(t *testing.T) {
				var calls atomic.Int64
				var panics panicLog
				bad := func(crew.TaskInfo) {
					if calls.Add(1)%2 == 0 {
						m.do()
					}
				}
				var h crew.Hooks
				switch hook {
				case "Queued":
					h.Queued = bad
				case "Started":
					h.Started = bad
				default:
					h.Finished = bad
				}
				root, mid, leaf := subSubTree(t, crew.WithHooks(h), crew.WithPanicHandler(panics.handler))
				const n = 40
				var runs [n]atomic.Int32
				var accepted [n]atomic.Bool
				var wg sync.WaitGroup
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if leaf.Submit(func() { runs[i].Add(1) }) == nil {
							accepted[i].Store(true)
						}
					}()
				}
				awaitReturn(t, "the submitters", goRun(wg.Wait))
				awaitReturn(t, "root.Wait", goRun(root.Wait))
				misbehaved := int(calls.Load() / 2)
				var ran, acc int
				for i := range n {
					r := int(runs[i].Load())
					if r > 1 || (r == 1 && !accepted[i].Load()) {
						t.Fatalf("task %d ran %d times, accepted %v", i, r, accepted[i].Load())
					}
					ran += r
					if accepted[i].Load() {
						acc++
					}
				}
				s := leaf.Stats()
				wantAcc, wantRan := n, n
				if m.name == "goexit" {
					switch hook {
					case "Queued":
						wantAcc, wantRan = n-misbehaved, n-misbehaved
					case "Started":
						wantRan = n - misbehaved
					}
				} else {
					waitFor(t, "the panic handler", func() bool { return panics.len() == misbehaved })
				}
				if acc != wantAcc || ran != wantRan || int(s.Accepted) != wantAcc || int(s.Completed) != wantAcc {
					t.Fatalf("accepted %d, ran %d, Stats %+v; want %d accepted and completed, %d ran (%d misbehaved)",
						acc, ran, s, wantAcc, wantRan, misbehaved)
				}
				for name, p := range map[string]*crew.Pool{"root": root, "mid": mid, "leaf": leaf} {
					idleIdentity(t, name, p.Stats())
				}
			})
		}
	}
}

// TestAdvCallbackHookCallsBackIntoItsSubSubPool attacks "Each hook runs ... with no lock of
// the pool held, so a hook may call Pool.Stats, Pool.TrySubmit, Pool.Resize or Pool.Stop on
// the pool", extended to Pause, StopNow and Submit, on a sub-pool of a priority sub-pool and
// on the pools above it: nothing deadlocks, and every accepted task either runs once or is
// handed back by StopNow.
func TestAdvCallbackHookCallsBackIntoItsSubSubPool(t *testing.T) {
	type tree struct{ root, mid, leaf *crew.Pool }
	type back struct {
		name string
		hook string
		do   func(tr tree, extra func()) []func()
	}
	backs := []back{
		{"QueuedStop", "Queued", func(tr tree, _ func()) []func() { tr.leaf.Stop(); return nil }},
		{"QueuedStopNowParent", "Queued", func(tr tree, _ func()) []func() { return tr.mid.StopNow() }},
		{"QueuedWait", "Queued", func(tr tree, _ func()) []func() { tr.leaf.Wait(); return nil }},
		{"StartedPauseRoot", "Started", func(tr tree, _ func()) []func() { tr.root.Pause(); return nil }},
		{"StartedResizeMid", "Started", func(tr tree, _ func()) []func() { tr.mid.Resize(1); return nil }},
		{"StartedSubmit", "Started", func(tr tree, extra func()) []func() { _ = tr.leaf.Submit(extra); return nil }},
		{"StartedStopNow", "Started", func(tr tree, _ func()) []func() { return tr.leaf.StopNow() }},
		{"FinishedStopNowRoot", "Finished", func(tr tree, _ func()) []func() { return tr.root.StopNow() }},
		{"FinishedResizeLeaf", "Finished", func(tr tree, _ func()) []func() { tr.leaf.Resize(1); return nil }},
		{"RejectedTrySubmit", "Rejected", func(tr tree, extra func()) []func() { tr.leaf.TrySubmit(extra); return nil }},
	}
	for _, b := range backs {
		t.Run(b.name, func(t *testing.T) {
			var tr tree
			var ran atomic.Int64
			var mu sync.Mutex
			var handed []func()
			var fired atomic.Int32
			extra := func() { ran.Add(1) }
			call := func() {
				if fired.Add(1) == 3 {
					got := b.do(tr, extra)
					mu.Lock()
					handed = append(handed, got...)
					mu.Unlock()
				}
			}
			var h crew.Hooks
			switch b.hook {
			case "Queued":
				h.Queued = func(crew.TaskInfo) { call() }
			case "Started":
				h.Started = func(crew.TaskInfo) { call() }
			case "Finished":
				h.Finished = func(crew.TaskInfo) { call() }
			default:
				h.Rejected = func(error) { call() }
			}
			tr.root, tr.mid, tr.leaf = subSubTree(t, crew.WithHooks(h), crew.WithQueueSize(2), crew.WithNonBlocking())
			const n = 30
			var refused int
			for range n {
				if err := returnsWithin(t, "a submit", func() error { return tr.leaf.Submit(func() { ran.Add(1) }) }); err != nil {
					refused++
				}
			}
			// A pause from a hook holds the rest: resume once it has happened.
			if b.hook == "Started" {
				waitFor(t, "the third start", func() bool { return fired.Load() >= 3 })
			}
			tr.root.Resume()
			awaitReturn(t, "root.Wait", goRun(tr.root.Wait))
			s := tr.leaf.Stats()
			mu.Lock()
			back := len(handed)
			mu.Unlock()
			if got := uint64(ran.Load()) + uint64(back); got != s.Accepted || s.Accepted+uint64(refused) < n {
				t.Fatalf("ran %d + handed back %d = %d, want Accepted %d; %d refused (Stats %+v)",
					ran.Load(), back, got, s.Accepted, refused, s)
			}
			if s.Returned != uint64(back) {
				t.Fatalf("Stats %+v: Returned %d, want the %d StopNow handed back", s, s.Returned, back)
			}
			for name, p := range map[string]*crew.Pool{"root": tr.root, "mid": tr.mid, "leaf": tr.leaf} {
				idleIdentity(t, name, p.Stats())
			}
		})
	}
}

// fnDoors runs fn once through each door that reports a function's end to its caller, on p,
// and returns what the caller sees.
var fnDoors = []struct {
	name string
	run  func(p *crew.Pool, fn func()) error
}{
	{"Go", func(p *crew.Pool, fn func()) error {
		_, err := crew.Go(p, func() (int, error) { fn(); return 1, nil }).Wait()
		return err
	}},
	{"GoContext", func(p *crew.Pool, fn func()) error {
		_, err := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { fn(); return 1, nil }).Wait()
		return err
	}},
	{"Group", func(p *crew.Pool, fn func()) error {
		g, _ := p.Group(context.Background())
		g.Go(func(context.Context) error { fn(); return nil })
		return g.Wait()
	}},
	{"GroupAll", func(p *crew.Pool, fn func()) error {
		g, _ := p.GroupAll(context.Background())
		g.Go(func(context.Context) error { return nil })
		g.Go(func(context.Context) error { fn(); return nil })
		return g.Wait()
	}},
	{"Results", func(p *crew.Pool, fn func()) error {
		r, _ := crew.NewResults[int](context.Background(), p)
		r.Go(func(context.Context) (int, error) { fn(); return 1, nil })
		_, err := r.Wait()
		return err
	}},
	{"Map", func(p *crew.Pool, fn func()) error {
		_, err := crew.Map(context.Background(), p, []int{1}, func(context.Context, int) (int, error) { fn(); return 1, nil })
		return err
	}},
	{"ForEach", func(p *crew.Pool, fn func()) error {
		return crew.ForEach(context.Background(), p, countTo(1), func(context.Context, int) error { fn(); return nil })
	}},
	{"MapSeq", func(p *crew.Pool, fn func()) error {
		var last error
		for _, err := range crew.MapSeq(context.Background(), p, countTo(1), func(context.Context, int) (int, error) { fn(); return 1, nil }) {
			last = err
		}
		return last
	}},
	{"MapSeqUnordered", func(p *crew.Pool, fn func()) error {
		var last error
		for _, err := range crew.MapSeqUnordered(context.Background(), p, countTo(1), func(context.Context, int) (int, error) { fn(); return 1, nil }) {
			last = err
		}
		return last
	}},
}

// TestAdvCallbackFunctionMisbehavingOnEachDoorOfASubSubPool attacks "a function run by Go,
// GoContext, a Group, Results, Map, ForEach, MapSeq or MapSeqUnordered reports it as a
// *PanicError from Wait", "panic(nil) is a panic like any other" and the Goexit of such a
// function being reported to its caller, never the panic handler, on a sub-pool of a priority
// sub-pool that a Pause holds until the call waits.
func TestAdvCallbackFunctionMisbehavingOnEachDoorOfASubSubPool(t *testing.T) {
	for _, d := range fnDoors {
		for _, m := range advMisbehaviours {
			t.Run(d.name+"/"+m.name, func(t *testing.T) {
				var panics panicLog
				root, mid, leaf := subSubTree(t, crew.WithPanicHandler(panics.handler))
				mid.Pause()
				var err error
				done := goRun(func() { err = d.run(leaf, m.do) })
				stillBlocked(t, d.name+" on a paused tree", done)
				mid.Resume()
				awaitReturn(t, d.name, done)
				switch m.name {
				case "goexit":
					if err == nil || !strings.Contains(err.Error(), "Goexit") {
						t.Fatalf("%s = %v, want an error naming Goexit", d.name, err)
					}
				default:
					var pe *crew.PanicError
					if !errors.As(err, &pe) {
						t.Fatalf("%s = %v, want a *PanicError", d.name, err)
					}
					want := any("callback boom")
					if m.name == "panicnil" {
						want = panicNilValue()
						if _, ok := want.(*runtime.PanicNilError); ok {
							if _, ok := pe.Value.(*runtime.PanicNilError); !ok {
								t.Fatalf("PanicError.Value = %v (%T), want a *runtime.PanicNilError", pe.Value, pe.Value)
							}
							break
						}
					}
					if pe.Value != want {
						t.Fatalf("PanicError.Value = %v, want %v", pe.Value, want)
					}
				}
				awaitReturn(t, "root.Wait", goRun(root.Wait))
				if panics.len() != 0 {
					t.Fatalf("the panic handler got %v; a function's end goes to its caller", panics.values)
				}
				for name, p := range map[string]*crew.Pool{"root": root, "mid": mid, "leaf": leaf} {
					idleIdentity(t, name, p.Stats())
				}
			})
		}
	}
}

// TestAdvCallbackContextHookMisbehaving attacks Hooks.Context: a nil context returned means
// the function receives the one it was to receive; a Context hook or an end function that
// panics (any value, nil) goes to the panic handler and the function runs once; one that calls
// runtime.Goexit ends the worker and nothing else: the caller's Wait returns, and for the end
// function the function's own outcome stands.
func TestAdvCallbackContextHookMisbehaving(t *testing.T) {
	type key struct{}
	for _, where := range []string{"nilctx", "Context", "end"} {
		ms := advMisbehaviours
		if where == "nilctx" {
			ms = []misbehaviour{{"none", func() {}}}
		}
		for _, m := range ms {
			t.Run(where+"/"+m.name, func(t *testing.T) {
				var panics panicLog
				root, _, leaf := subSubTree(t, crew.WithPanicHandler(panics.handler), crew.WithHooks(crew.Hooks{
					Context: func(ctx context.Context) (context.Context, func(error)) {
						switch where {
						case "nilctx":
							return nil, nil
						case "Context":
							m.do()
						}
						return ctx, func(error) { m.do() }
					},
				}))
				ctx := context.WithValue(context.Background(), key{}, "mine")
				g, _ := leaf.Group(ctx)
				var ran atomic.Int32
				g.Go(func(ctx context.Context) error {
					ran.Add(1)
					if ctx == nil || ctx.Value(key{}) != "mine" {
						t.Error("the function did not receive its own context")
					}
					return nil
				})
				err := returnsWithin(t, "Group.Wait", g.Wait)
				awaitReturn(t, "root.Wait", goRun(root.Wait))
				switch {
				case m.name == "goexit" && where == "Context":
					if ran.Load() != 0 || err == nil {
						t.Fatalf("ran %d, Wait = %v; want the function not run and Wait reporting it", ran.Load(), err)
					}
				default:
					if ran.Load() != 1 || err != nil {
						t.Fatalf("ran %d, Wait = %v; want once and nil", ran.Load(), err)
					}
				}
				if m.name == "panic" || m.name == "panicnil" {
					waitFor(t, "the panic handler", func() bool { return panics.len() == 1 })
				}
				idleIdentity(t, "leaf", leaf.Stats())
				idleIdentity(t, "root", root.Stats())
			})
		}
	}
}

// TestAdvCallbackContextHookEndGoexitLeavesTheOutcome attacks "A hook that calls
// runtime.Goexit ends the goroutine it runs on, as a task that calls it does, and nothing
// else" for the end function of Hooks.Context, which "is called on that goroutine once the
// function has ended": like a Finished hook's Goexit, it must leave the function's outcome
// standing, so a function that returned a value and nil is reported so by its future, group
// and Map call, on a pool and on a sub-pool of a sub-pool.
func TestAdvCallbackContextHookEndGoexitLeavesTheOutcome(t *testing.T) {
	hooks := crew.WithHooks(crew.Hooks{
		Context: func(ctx context.Context) (context.Context, func(error)) {
			return ctx, func(error) { runtime.Goexit() }
		},
	})
	root := advCbPool(t, 2, hooks)
	_, _, leaf := subSubTree(t, hooks)
	for name, p := range map[string]*crew.Pool{"root": root, "subsub": leaf} {
		t.Run(name, func(t *testing.T) {
			var v int
			err := returnsWithin(t, "Future.Wait", func() (err error) {
				v, err = crew.GoContext(context.Background(), p, func(context.Context) (int, error) { return 42, nil }).Wait()
				return err
			})
			if v != 42 || err != nil {
				t.Errorf("GoContext: Wait = %d, %v; want 42, nil", v, err)
			}
			g, _ := p.Group(context.Background())
			g.Go(func(context.Context) error { return nil })
			if err := returnsWithin(t, "Group.Wait", g.Wait); err != nil {
				t.Errorf("Group.Wait = %v, want nil", err)
			}
			var out []int
			err = returnsWithin(t, "Map", func() (err error) {
				out, err = crew.Map(context.Background(), p, []int{1, 2}, func(_ context.Context, x int) (int, error) { return x, nil })
				return err
			})
			if err != nil || len(out) != 2 || out[0] != 1 || out[1] != 2 {
				t.Errorf("Map = %v, %v; want [1 2], nil", out, err)
			}
			p.Wait()
			idleIdentity(t, name, p.Stats())
		})
	}
}

// chanCtx is a context.Context of its own making, not built on the standard library's: it
// ends when end is called, and carries no values.
type chanCtx struct {
	done chan struct{}
	once sync.Once
	err  atomic.Value
}

func newChanCtx() *chanCtx { return &chanCtx{done: make(chan struct{})} }

func (c *chanCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *chanCtx) Done() <-chan struct{}       { return c.done }
func (c *chanCtx) Value(any) any               { return nil }
func (c *chanCtx) Err() error {
	if err, ok := c.err.Load().(error); ok {
		return err
	}
	return nil
}
func (c *chanCtx) end() {
	c.once.Do(func() {
		c.err.Store(context.Canceled)
		close(c.done)
	})
}

// TestAdvCallbackCustomContextEndsSkipAndLeaveNoGoroutine attacks the skipping promise ("If
// that context ends before a worker takes the function, the function never runs: it is
// skipped, counted in Stats.Skipped, and its future, group or call sees context.Cause of the
// context") with a context.Context implemented by the user, not derived from the standard
// library's, on a sub-pool of a sub-pool: the end is seen, and once every call has returned no
// goroutine watches that context any more.
func TestAdvCallbackCustomContextEndsSkipAndLeaveNoGoroutine(t *testing.T) {
	// Idle workers exit at once, so that the goroutines counted at the end are those left
	// watching a context.
	root := advCbPool(t, 3, crew.WithIdleTimeout(0))
	leaf := root.Sub(3, crew.WithPriority(1)).Sub(2)
	base := runtime.NumGoroutine()
	task, started, release := blocker()
	must(t, leaf.Submit(task))
	must(t, leaf.Submit(task))
	<-started
	<-started
	ctx := newChanCtx()
	g, gctx := leaf.Group(ctx)
	var ran atomic.Int32
	for range 3 {
		g.Go(func(context.Context) error { ran.Add(1); return nil })
	}
	r, rctx := crew.NewResults[int](ctx, leaf)
	r.Go(func(context.Context) (int, error) { ran.Add(1); return 1, nil })
	r.Go(func(context.Context) (int, error) { ran.Add(1); return 1, nil })
	ctx.end()
	// The standard library follows a context of the user's making on a goroutine of its own,
	// and a function taken in that moment runs (package documentation, "A task's life"):
	// wait for the groups' contexts to have ended too.
	awaitReturn(t, "the group's context to follow", gctx.Done())
	awaitReturn(t, "the results' context to follow", rctx.Done())
	close(release)
	if err := returnsWithin(t, "Group.Wait", g.Wait); !errors.Is(err, context.Canceled) {
		t.Fatalf("Group.Wait = %v, want context.Canceled", err)
	}
	if err := returnsWithin(t, "Results.Wait", func() error { _, err := r.Wait(); return err }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Results.Wait = %v, want context.Canceled", err)
	}
	awaitReturn(t, "root.Wait", goRun(root.Wait))
	if ran.Load() != 0 {
		t.Fatalf("%d functions ran after their context ended", ran.Load())
	}
	if s := leaf.Stats(); s.Skipped != 5 {
		t.Fatalf("leaf Stats %+v: Skipped %d, want 5", s, s.Skipped)
	}
	idleIdentity(t, "leaf", leaf.Stats())
	idleIdentity(t, "root", root.Stats())

	// ForEach and MapSeq over a custom context that ends midway stop with its error.
	ctx2 := newChanCtx()
	err := returnsWithin(t, "ForEach", func() error {
		return crew.ForEach(ctx2, leaf, endless(new(atomic.Int64)), func(_ context.Context, x int) error {
			if x == 3 {
				ctx2.end()
			}
			return nil
		})
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("ForEach = %v, want context.Canceled", err)
	}
	ctx3 := newChanCtx()
	var last error
	awaitReturn(t, "MapSeq", goRun(func() {
		for v, err := range crew.MapSeq(ctx3, leaf, endless(new(atomic.Int64)), func(_ context.Context, x int) (int, error) { return x, nil }) {
			if v == 3 {
				ctx3.end()
			}
			last = err
		}
	}))
	if !errors.Is(last, context.Canceled) {
		t.Fatalf("MapSeq ended with %v, want context.Canceled", last)
	}
	awaitReturn(t, "root.Wait", goRun(root.Wait))
	idleIdentity(t, "leaf", leaf.Stats())
	awaitGoroutines(t, "after calls on a custom context", base)
}

// panickyCtx is a context whose method named what panics.
type panickyCtx struct {
	context.Context
	what string
}

func (c panickyCtx) Value(k any) any {
	if c.what == "Value" {
		panic("ctx Value boom")
	}
	return c.Context.Value(k)
}

func (c panickyCtx) Done() <-chan struct{} {
	if c.what == "Done" {
		panic("ctx Done boom")
	}
	return c.Context.Done()
}

// TestAdvCallbackPanickingContextPanicsOnTheCallerAndAcceptsNothing: a context whose Value or
// Done panics, handed to a call that takes a context, panics on the caller, where the mistake
// is, never on a worker (which would take the process down): nothing is accepted, the pool's
// counters stay at zero, and it goes on serving.
func TestAdvCallbackPanickingContextPanicsOnTheCallerAndAcceptsNothing(t *testing.T) {
	calls := map[string]func(ctx context.Context, p *crew.Pool){
		"Group": func(ctx context.Context, p *crew.Pool) {
			g, _ := p.Group(ctx)
			g.Go(func(context.Context) error { return nil })
			_ = g.Wait()
		},
		"GoContext": func(ctx context.Context, p *crew.Pool) {
			_, _ = crew.GoContext(ctx, p, func(context.Context) (int, error) { return 1, nil }).Wait()
		},
		"ForEach": func(ctx context.Context, p *crew.Pool) {
			_ = crew.ForEach(ctx, p, countTo(3), func(context.Context, int) error { return nil })
		},
		"MapSeq": func(ctx context.Context, p *crew.Pool) {
			for range crew.MapSeq(ctx, p, countTo(3), func(_ context.Context, x int) (int, error) { return x, nil }) {
			}
		},
		"SubmitContext": func(ctx context.Context, p *crew.Pool) { _ = p.SubmitContext(ctx, func() {}) },
	}
	for _, what := range []string{"Value", "Done"} {
		for name, call := range calls {
			t.Run(what+"/"+name, func(t *testing.T) {
				root, _, leaf := subSubTree(t)
				var got any
				awaitReturn(t, name, goRun(func() {
					defer func() { got = recover() }()
					call(panickyCtx{context.Background(), what}, leaf)
				}))
				if got != "ctx "+what+" boom" {
					t.Fatalf("%s with a context whose %s panics: recovered %v", name, what, got)
				}
				awaitReturn(t, "root.Wait", goRun(root.Wait))
				if s := leaf.Stats(); s.Accepted != 0 {
					t.Fatalf("leaf Stats %+v: want nothing accepted", s)
				}
				idleIdentity(t, "root", root.Stats())
				done := make(chan struct{})
				must(t, leaf.Submit(func() { close(done) }))
				awaitReturn(t, "a task afterwards", done)
			})
		}
	}
}

// TestAdvCallbackSequenceValueAfterCtxEndedIsNotCalled attacks ForEach's "It stops pulling ...
// when ctx ends ... and returns ... ctx.Err() if ctx ended first and no call failed" and
// MapSeq's "If ctx ends during the range, pulling stops ... and (zero, ctx.Err()) is yielded
// last", with a context of package context that a call cancels on a worker while the
// sequence waits for its end and then yields one more value: that value is never called, and
// the call reports ctx.Err().
func TestAdvCallbackSequenceValueAfterCtxEndedIsNotCalled(t *testing.T) {
	p := advCbPool(t, 2)
	rounds := 1000
	if testing.Short() {
		rounds = 300
	}
	var called atomic.Int32
	for range rounds {
		ctx, cancel := context.WithCancel(context.Background())
		in := func(yield func(int) bool) {
			if !yield(1) {
				return
			}
			<-ctx.Done()
			yield(2)
		}
		err := crew.ForEach(ctx, p, in, func(_ context.Context, x int) error {
			if x == 1 {
				cancel()
			} else {
				called.Add(1)
			}
			return nil
		})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("ForEach = %v, want context.Canceled (fn called %d times after ctx ended so far)", err, called.Load())
		}
		ctx2, cancel2 := context.WithCancel(context.Background())
		in2 := func(yield func(int) bool) {
			if !yield(1) {
				return
			}
			<-ctx2.Done()
			yield(2)
		}
		var last error
		for _, err := range crew.MapSeq(ctx2, p, in2, func(_ context.Context, x int) (int, error) {
			if x == 1 {
				cancel2()
			} else {
				called.Add(1)
			}
			return x, nil
		}) {
			last = err
		}
		cancel2()
		if !errors.Is(last, context.Canceled) {
			t.Fatalf("MapSeq ended with %v, want context.Canceled (fn called %d times after ctx ended so far)", last, called.Load())
		}
	}
	if n := called.Load(); n != 0 {
		t.Fatalf("fn called %d times for values yielded after ctx ended", n)
	}
	p.Wait()
	idleIdentity(t, "pool", p.Stats())
}

// TestAdvCallbackQueuedHookGoexitInsideACallLeavesNoCallRunning attacks "a Queued or Rejected
// hook ends the submitter inside its submit, and the task is not accepted and never runs" where
// the submitter is the goroutine of Map, ForEach or a range over MapSeq: the goroutine ends,
// and, as "no call outlives ForEach" and "when the range statement ends, however it ends, no
// call started by it is still running" promise, no call it made is still running then; on a
// sub-pool of a priority sub-pool.
func TestAdvCallbackQueuedHookGoexitInsideACallLeavesNoCallRunning(t *testing.T) {
	calls := map[string]func(p *crew.Pool, fn func(context.Context, int) (int, error)){
		"Map": func(p *crew.Pool, fn func(context.Context, int) (int, error)) {
			_, _ = crew.Map(context.Background(), p, []int{0, 1, 2, 3, 4, 5}, fn)
		},
		"ForEach": func(p *crew.Pool, fn func(context.Context, int) (int, error)) {
			_ = crew.ForEach(context.Background(), p, countTo(6), func(ctx context.Context, x int) error { _, err := fn(ctx, x); return err })
		},
		"MapSeq": func(p *crew.Pool, fn func(context.Context, int) (int, error)) {
			for range crew.MapSeq(context.Background(), p, countTo(6), fn) {
			}
		},
		"MapSeqUnordered": func(p *crew.Pool, fn func(context.Context, int) (int, error)) {
			for range crew.MapSeqUnordered(context.Background(), p, countTo(6), fn) {
			}
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			var queued atomic.Int32
			root, mid, leaf := subSubTree(t, crew.WithHooks(crew.Hooks{
				Queued: func(crew.TaskInfo) {
					if queued.Add(1) == 2 {
						runtime.Goexit()
					}
				},
			}))
			var running, ran atomic.Int32
			firstIn := make(chan struct{})
			var once sync.Once
			fn := func(ctx context.Context, x int) (int, error) {
				running.Add(1)
				defer running.Add(-1)
				ran.Add(1)
				once.Do(func() { close(firstIn) })
				select { // the first call is in flight when the Goexit comes, and watches ctx
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
				return x, nil
			}
			var leftRunning int32 = -1
			var returned bool
			done := goRun(func() {
				defer func() { leftRunning = running.Load() }()
				call(leaf, fn)
				returned = true
			})
			awaitReturn(t, name+" whose Queued hook calls Goexit", done)
			if returned {
				t.Fatalf("%s returned; want its goroutine ended by the hook's Goexit", name)
			}
			if leftRunning != 0 {
				t.Fatalf("%d calls still running when %s's goroutine ended", leftRunning, name)
			}
			awaitReturn(t, "root.Wait", goRun(root.Wait))
			if ran.Load() > 1 {
				t.Fatalf("%d calls ran; the submit after the Goexit must never have been made", ran.Load())
			}
			for pname, p := range map[string]*crew.Pool{"root": root, "mid": mid, "leaf": leaf} {
				idleIdentity(t, pname, p.Stats())
			}
		})
	}
}

// TestAdvCallbackPanicHandlerCallsBackIntoThePool attacks "Stop, Stats, TrySubmit and Resize
// are safe from a task" and StopNow's and Pause's "safe to call from a task" for the panic
// handler, which runs on the worker: called there on a sub-pool of a priority sub-pool or on
// the pools above it, nothing deadlocks, and every accepted task runs once or is handed back.
func TestAdvCallbackPanicHandlerCallsBackIntoThePool(t *testing.T) {
	type tree struct{ root, mid, leaf *crew.Pool }
	backs := map[string]func(tr tree, extra func()) []func(){
		"Stats":         func(tr tree, _ func()) []func() { _ = tr.root.Stats(); _ = tr.leaf.Stats(); return nil },
		"TrySubmit":     func(tr tree, extra func()) []func() { tr.leaf.TrySubmit(extra); return nil },
		"ResizeMid":     func(tr tree, _ func()) []func() { tr.mid.Resize(1); return nil },
		"ResizeLeaf":    func(tr tree, _ func()) []func() { tr.leaf.Resize(3); return nil },
		"StopLeaf":      func(tr tree, _ func()) []func() { tr.leaf.Stop(); return nil },
		"StopNowLeaf":   func(tr tree, _ func()) []func() { return tr.leaf.StopNow() },
		"StopNowRoot":   func(tr tree, _ func()) []func() { return tr.root.StopNow() },
		"PauseResume":   func(tr tree, _ func()) []func() { tr.mid.Pause(); tr.mid.Resume(); return nil },
		"SubmitSibling": func(tr tree, extra func()) []func() { _ = tr.mid.Submit(extra); return nil },
	}
	for name, back := range backs {
		t.Run(name, func(t *testing.T) {
			var tr tree
			var ran atomic.Int64
			var mu sync.Mutex
			var handed []func()
			var handled atomic.Int32
			extra := func() { ran.Add(1) }
			handler := func(any, []byte) {
				if handled.Add(1) <= 2 {
					got := back(tr, extra)
					mu.Lock()
					handed = append(handed, got...)
					mu.Unlock()
				}
			}
			tr.root = advCbPool(t, 3)
			tr.mid = tr.root.Sub(2, crew.WithPriority(1))
			tr.leaf = tr.mid.Sub(2, crew.WithPanicHandler(handler))
			const n = 30
			for i := range n {
				err := tr.leaf.Submit(func() {
					ran.Add(1)
					if i%7 == 0 {
						panic(i)
					}
				})
				if err != nil && !errors.Is(err, crew.ErrStopped) {
					t.Fatal(err)
				}
			}
			awaitReturn(t, "root.Wait", goRun(tr.root.Wait))
			mu.Lock()
			back := uint64(len(handed))
			mu.Unlock()
			ls := tr.leaf.Stats()
			// ran counts the leaf's tasks and the extra ones given to the mid-pool.
			midOwn := uint64(0)
			if name == "SubmitSibling" {
				midOwn = uint64(min(handled.Load(), 2))
			}
			if uint64(ran.Load())+back != ls.Accepted+midOwn || ls.Returned != back {
				t.Fatalf("ran %d + handed back %d, want the leaf's %d accepted + %d given to mid; leaf Stats %+v",
					ran.Load(), back, ls.Accepted, midOwn, ls)
			}
			for pname, p := range map[string]*crew.Pool{"root": tr.root, "mid": tr.mid, "leaf": tr.leaf} {
				idleIdentity(t, pname, p.Stats())
			}
		})
	}
}

// TestAdvCallbackSequenceCallsBackIntoThePool attacks ForEach's "returns ... ErrStopped if p
// is stopped" and MapSeq's "A refusal by p mid-range (ErrStopped once p is stopped ...) is the
// failure of the value that p refused", with a sequence that itself stops the pool (Stop,
// StopNow, or its parent's Stop), pauses it, resizes it or waits for it, midway, on a sub-pool
// of a priority sub-pool: the call ends, with ErrStopped where the pool stopped, and every
// value is called at most once.
func TestAdvCallbackSequenceCallsBackIntoThePool(t *testing.T) {
	type tree struct{ root, mid, leaf *crew.Pool }
	actions := []struct {
		name  string
		stops bool
		do    func(tr tree)
	}{
		{"Stop", true, func(tr tree) { tr.leaf.Stop() }},
		{"StopNow", true, func(tr tree) { tr.leaf.StopNow() }},
		{"ParentStop", true, func(tr tree) { tr.mid.Stop() }},
		{"Resize", false, func(tr tree) { tr.leaf.Resize(1); tr.mid.Resize(1) }},
		{"Wait", false, func(tr tree) { tr.leaf.Wait() }},
		{"PauseResume", false, func(tr tree) {
			tr.root.Pause()
			go func() {
				time.Sleep(5 * time.Millisecond)
				tr.root.Resume()
			}()
		}},
	}
	for _, a := range actions {
		for _, door := range []string{"ForEach", "MapSeq", "MapSeqUnordered"} {
			t.Run(a.name+"/"+door, func(t *testing.T) {
				var tr tree
				tr.root = crew.New(3)
				tr.mid = tr.root.Sub(3, crew.WithPriority(1))
				tr.leaf = tr.mid.Sub(2)
				const n = 12
				in := func(yield func(int) bool) {
					for i := range n {
						if i == n/2 {
							a.do(tr)
						}
						if !yield(i) {
							return
						}
					}
				}
				var calls [n]atomic.Int32
				fn := func(_ context.Context, x int) (int, error) {
					calls[x].Add(1)
					return x, nil
				}
				var err error
				var got int
				awaitReturn(t, door, goRun(func() {
					switch door {
					case "ForEach":
						err = crew.ForEach(context.Background(), tr.leaf, in, func(ctx context.Context, x int) error {
							_, err := fn(ctx, x)
							return err
						})
					default:
						mk := crew.MapSeq[int, int]
						if door == "MapSeqUnordered" {
							mk = crew.MapSeqUnordered[int, int]
						}
						for _, e := range mk(context.Background(), tr.leaf, in, fn) {
							if e != nil {
								err = e
								continue
							}
							got++
						}
					}
				}))
				total := 0
				for i := range calls {
					c := int(calls[i].Load())
					if c > 1 {
						t.Fatalf("value %d called %d times", i, c)
					}
					total += c
				}
				if a.stops {
					if !errors.Is(err, crew.ErrStopped) {
						t.Fatalf("%s = %v, want ErrStopped after the sequence stopped the pool", door, err)
					}
				} else if err != nil || total != n {
					t.Fatalf("%s = %v after %d of %d calls, want nil and every value called", door, err, total, n)
				}
				if door != "ForEach" && got != total && !a.stops {
					t.Fatalf("%s yielded %d results for %d calls", door, got, total)
				}
				awaitReturn(t, "StopAndWait", goRun(tr.root.StopAndWait))
				for pname, p := range map[string]*crew.Pool{"root": tr.root, "mid": tr.mid, "leaf": tr.leaf} {
					idleIdentity(t, pname, p.Stats())
				}
			})
		}
	}
}

// TestAdvCallbackSeveralHooksEachGuardedOnItsOwn attacks WithHooks' "for each event, the hooks
// of each are called in the order the options were given, each guarded on its own, so that the
// panic of one does not keep the next from being called", for every event (Queued, Started,
// Finished, Rejected, Discarded) on a sub-pool of a priority sub-pool with DiscardOldest: the
// second set of hooks sees every event once, and the first set's panics (with a value and with
// nil) all reach the panic handler.
func TestAdvCallbackSeveralHooksEachGuardedOnItsOwn(t *testing.T) {
	var panics panicLog
	var seen [5]atomic.Int32 // Queued, Started, Finished, Rejected, Discarded of the second set
	var firstCalls atomic.Int32
	bad := func() {
		if firstCalls.Add(1)%2 == 0 {
			panic(nil)
		}
		panic("first hook")
	}
	first := crew.WithHooks(crew.Hooks{
		Queued:    func(crew.TaskInfo) { bad() },
		Started:   func(crew.TaskInfo) { bad() },
		Finished:  func(crew.TaskInfo) { bad() },
		Rejected:  func(error) { bad() },
		Discarded: func(crew.TaskInfo) { bad() },
	})
	second := crew.WithHooks(crew.Hooks{
		Queued:    func(crew.TaskInfo) { seen[0].Add(1) },
		Started:   func(crew.TaskInfo) { seen[1].Add(1) },
		Finished:  func(crew.TaskInfo) { seen[2].Add(1) },
		Rejected:  func(error) { seen[3].Add(1) },
		Discarded: func(crew.TaskInfo) { seen[4].Add(1) },
	})
	root, mid, leaf := subSubTree(t, first, second, crew.WithPanicHandler(panics.handler),
		crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest))
	task, started, release := blocker()
	for range 2 {
		must(t, leaf.Submit(task))
		<-started
	}
	var ran atomic.Int32
	for range 3 { // the first two are dropped in turn by the next
		must(t, leaf.Submit(func() { ran.Add(1) }))
	}
	if leaf.TrySubmit(func() { ran.Add(1) }) {
		t.Fatal("TrySubmit on a full queue reported true")
	}
	close(release)
	awaitReturn(t, "root.Wait", goRun(root.Wait))
	leaf.Stop()
	if leaf.Submit(func() {}) == nil {
		t.Fatal("Submit after Stop accepted")
	}
	want := [5]int32{7, 3, 3, 2, 2}
	var got [5]int32
	for i := range seen {
		got[i] = seen[i].Load()
	}
	if got != want || ran.Load() != 1 {
		t.Fatalf("second hooks saw Queued, Started, Finished, Rejected, Discarded %v, want %v; %d ran, want 1", got, want, ran.Load())
	}
	total := int(firstCalls.Load())
	if total != 17 {
		t.Fatalf("first hooks called %d times, want 17", total)
	}
	if panics.len() != total {
		t.Fatalf("panic handler got %d panics, want %d", panics.len(), total)
	}
	for pname, p := range map[string]*crew.Pool{"root": root, "mid": mid, "leaf": leaf} {
		idleIdentity(t, pname, p.Stats())
	}
}

// TestAdvCallbackFunctionsCallBackIntoTheirPool attacks StopNow's "Functions of Go, Group,
// Results, Map and ForEach taken out fail with ErrStopped, so their Wait returns" and "Every
// accepted task either runs exactly once or is returned (or failed) by StopNow", and "Calling
// Stop, Stats, TrySubmit or growing Resize from inside a task never deadlocks", with the
// functions of a group, Results, Map and MapSeq themselves calling StopNow, Stop or Resize on
// their sub-pool of a priority sub-pool or on its parent.
func TestAdvCallbackFunctionsCallBackIntoTheirPool(t *testing.T) {
	type tree struct{ root, mid, leaf *crew.Pool }
	actions := []struct {
		name  string
		stops bool
		do    func(tr tree)
	}{
		{"StopNowLeaf", true, func(tr tree) { tr.leaf.StopNow() }},
		{"StopNowMid", true, func(tr tree) { tr.mid.StopNow() }},
		{"StopLeaf", true, func(tr tree) { tr.leaf.Stop() }},
		{"ResizeUp", false, func(tr tree) { tr.leaf.Resize(4); tr.mid.Resize(4) }},
		{"ResizeDown", false, func(tr tree) { tr.mid.Resize(1) }},
		{"PauseResume", false, func(tr tree) { tr.mid.Pause(); tr.mid.Resume() }},
	}
	doors := map[string]func(p *crew.Pool, n int, fn func(x int)) (ran []int, err error){
		"Group": func(p *crew.Pool, n int, fn func(x int)) ([]int, error) {
			g, _ := p.Group(context.Background())
			for i := range n {
				g.Go(func(context.Context) error { fn(i); return nil })
			}
			return nil, g.Wait()
		},
		"Results": func(p *crew.Pool, n int, fn func(x int)) ([]int, error) {
			r, _ := crew.NewResults[int](context.Background(), p)
			for i := range n {
				r.Go(func(context.Context) (int, error) { fn(i); return i + 1, nil })
			}
			return r.Wait()
		},
		"Map": func(p *crew.Pool, n int, fn func(x int)) ([]int, error) {
			in := make([]int, n)
			for i := range in {
				in[i] = i
			}
			return crew.Map(context.Background(), p, in, func(_ context.Context, x int) (int, error) { fn(x); return x + 1, nil })
		},
		"MapSeq": func(p *crew.Pool, n int, fn func(x int)) ([]int, error) {
			var out []int
			for v, err := range crew.MapSeq(context.Background(), p, countTo(n), func(_ context.Context, x int) (int, error) { fn(x); return x + 1, nil }) {
				if err != nil {
					return out, err
				}
				out = append(out, v)
			}
			return out, nil
		},
	}
	for _, a := range actions {
		for dname, door := range doors {
			t.Run(a.name+"/"+dname, func(t *testing.T) {
				var tr tree
				tr.root = crew.New(3)
				tr.mid = tr.root.Sub(2, crew.WithPriority(1))
				tr.leaf = tr.mid.Sub(2)
				const n = 10
				var calls [n]atomic.Int32
				// The functions after the one that acts wait until it has acted: else, on a
				// busy machine, they may all run before it, and a stop then refuses nothing.
				acted := make(chan struct{})
				fn := func(x int) {
					calls[x].Add(1)
					switch {
					case x == 2:
						a.do(tr)
						close(acted)
					case x > 2:
						<-acted
					}
				}
				var out []int
				var err error
				awaitReturn(t, dname, goRun(func() { out, err = door(tr.leaf, n, fn) }))
				for i := range calls {
					if c := calls[i].Load(); c > 1 {
						t.Fatalf("function %d ran %d times", i, c)
					}
				}
				total := 0
				for i := range calls {
					total += int(calls[i].Load())
				}
				// Stop leaves accepted functions to run: a group whose every Go came before
				// it has nothing refused. Map and MapSeq submit as slots free up, so after it.
				mayFinish := a.name == "StopLeaf" && (dname == "Group" || dname == "Results")
				switch {
				case err == nil && total != n:
					t.Fatalf("%s = nil after %d of %d functions ran", dname, total, n)
				case a.stops && !(mayFinish && err == nil) && !errors.Is(err, crew.ErrStopped):
					t.Fatalf("%s = %v, want ErrStopped", dname, err)
				case !a.stops && err != nil:
					t.Fatalf("%s = %v, want nil", dname, err)
				}
				// A value given back belongs to a function that ran.
				for i, v := range out {
					if v != 0 && calls[v-1].Load() != 1 {
						t.Fatalf("%s: result %d (= %d) of a function that never ran", dname, i, v)
					}
				}
				awaitReturn(t, "StopAndWait", goRun(tr.root.StopAndWait))
				for pname, p := range map[string]*crew.Pool{"root": tr.root, "mid": tr.mid, "leaf": tr.leaf} {
					idleIdentity(t, pname, p.Stats())
				}
			})
		}
	}
}

// TestAdvCallbackCustomContextThatNeverEndsLeavesNoGoroutine attacks "After StopAndWait
// returns, no goroutine of the pool is left running" and "an idle pool keeps no goroutine
// beyond its minimum workers" with a context.Context of the user's making that never ends,
// given to every call that takes one and to WithContext on a pool and a sub-pool of a
// sub-pool: the standard library watches such a context on a goroutine of its own until what
// was derived from it is canceled, so every derived context must be.
func TestAdvCallbackCustomContextThatNeverEndsLeavesNoGoroutine(t *testing.T) {
	base := runtime.NumGoroutine()
	ctx := newChanCtx()
	func() {
		root := crew.New(3, crew.WithContext(ctx), crew.WithIdleTimeout(0))
		defer root.StopAndWait()
		mid := root.Sub(2, crew.WithPriority(1), crew.WithContext(ctx))
		leaf := mid.Sub(2, crew.WithContext(ctx))
		for _, p := range []*crew.Pool{root, leaf} {
			_, err := crew.GoContext(ctx, p, func(context.Context) (int, error) { return 1, nil }).Wait()
			must(t, err)
			g, _ := p.Group(ctx)
			g.Go(func(context.Context) error { return nil })
			must(t, g.Wait())
			ga, _ := p.GroupAll(ctx)
			ga.Go(func(context.Context) error { return nil })
			must(t, ga.Wait())
			r, _ := crew.NewResults[int](ctx, p)
			r.Go(func(context.Context) (int, error) { return 1, nil })
			_, err = r.Wait()
			must(t, err)
			_, err = crew.Map(ctx, p, []int{1, 2}, func(_ context.Context, x int) (int, error) { return x, nil })
			must(t, err)
			must(t, crew.ForEach(ctx, p, countTo(3), func(context.Context, int) error { return nil }))
			for _, err := range crew.MapSeq(ctx, p, countTo(3), func(_ context.Context, x int) (int, error) { return x, nil }) {
				must(t, err)
			}
			for _, err := range crew.MapSeqUnordered(ctx, p, countTo(3), func(_ context.Context, x int) (int, error) { return x, nil }) {
				must(t, err)
			}
			must(t, p.SubmitContext(ctx, func() {}))
			must(t, p.SubmitNContext(ctx, 1, func() {}))
			k := crew.NewKeyed[int](p)
			must(t, k.SubmitContext(ctx, 1, func() {}))
			k.Wait()
			must(t, p.PauseAndWait(ctx))
			p.Resume()
			p.Wait()
		}
		must(t, leaf.Shutdown(ctx))
		must(t, root.Shutdown(ctx))
	}()
	f := crew.NewFunc(2, func(int) {}, crew.WithContext(ctx), crew.WithIdleTimeout(0))
	must(t, f.InvokeContext(ctx, 1))
	must(t, f.Shutdown(ctx))
	awaitGoroutines(t, "after every call on a context that never ends", base)
}

// TestAdvCallbackSubSubPoolPanicGoesToTheNearestHandler attacks "A panic in a sub-pool's task
// goes to the sub-pool's handler, by default its parent's" two levels down: a sub-pool of a
// sub-pool with no handler of its own reports to the nearest pool above it that has one, and
// that handler's runtime.Goexit (it runs on the sub-pool's worker, a task of the pools above)
// loses no task of any level.
func TestAdvCallbackSubSubPoolPanicGoesToTheNearestHandler(t *testing.T) {
	for _, goexit := range []bool{false, true} {
		for _, midHas := range []bool{false, true} {
			t.Run(fmt.Sprintf("goexit=%v/midHandler=%v", goexit, midHas), func(t *testing.T) {
				var rootGot, midGot panicLog
				handler := func(l *panicLog) func(any, []byte) {
					return func(v any, s []byte) {
						l.handler(v, s)
						if goexit {
							runtime.Goexit()
						}
					}
				}
				root := advCbPool(t, 2, crew.WithPanicHandler(handler(&rootGot)))
				var midOpts []crew.Option
				if midHas {
					midOpts = append(midOpts, crew.WithPanicHandler(handler(&midGot)))
				}
				mid := root.Sub(2, append(midOpts, crew.WithPriority(1))...)
				leaf := mid.Sub(1)
				const n = 12
				var runs [n]atomic.Int32
				for i := range n {
					must(t, leaf.Submit(func() {
						runs[i].Add(1)
						if i%3 == 0 {
							panic(fmt.Sprint("leaf ", i))
						}
					}))
					must(t, root.Submit(func() {}))
				}
				awaitReturn(t, "root.Wait", goRun(root.Wait))
				ranOnce(t, runs[:])
				want, other := &rootGot, &midGot
				if midHas {
					want, other = &midGot, &rootGot
				}
				if want.len() != n/3 || other.len() != 0 || !want.has("leaf 0") {
					t.Fatalf("nearest handler got %v, the other %v; want the %d leaf panics at the nearest", want.values, other.values, n/3)
				}
				if s := leaf.Stats(); s.Panicked != n/3 {
					t.Fatalf("leaf Stats %+v: Panicked %d, want %d", s, s.Panicked, n/3)
				}
				for pname, p := range map[string]*crew.Pool{"root": root, "mid": mid, "leaf": leaf} {
					idleIdentity(t, pname, p.Stats())
				}
			})
		}
	}
}

// TestAdvCallbackFuncPoolCallbacksMisbehaving attacks, for a FuncPool, the Hooks promises (a
// panicking hook goes to the panic handler and the call still happens once; a Started hook's
// Goexit keeps the call from happening, counted as completed) and WithDiscardHandler's "gets
// ... the argument given to FuncPool.Invoke", "A handler that panics is reported to the panic
// handler and the submit still returns nil".
func TestAdvCallbackFuncPoolCallbacksMisbehaving(t *testing.T) {
	for _, m := range advMisbehaviours {
		t.Run(m.name, func(t *testing.T) {
			var panics panicLog
			var startedCalls atomic.Int32
			const n = 20
			var calls [n + 2]atomic.Int32
			var dropped []int
			release := make(chan struct{})
			holding := make(chan struct{})
			f := crew.NewFunc(1, func(x int) {
				if x < 0 {
					close(holding)
					<-release
					return
				}
				calls[x].Add(1)
			},
				crew.WithPanicHandler(panics.handler),
				crew.WithQueueSize(n), crew.WithOverflow(crew.DiscardOldest),
				crew.WithDiscardHandler(func(v any) {
					dropped = append(dropped, v.(int))
					m.do()
				}),
				crew.WithHooks(crew.Hooks{Started: func(crew.TaskInfo) {
					if startedCalls.Add(1)%4 == 0 {
						m.do()
					}
				}}))
			defer f.StopAndWait()
			must(t, f.Invoke(-1))
			awaitReturn(t, "the holding call", holding)
			for i := range n {
				must(t, f.Invoke(i))
			}
			// One more than the queue holds: the oldest, 0, goes to the discard handler on
			// this submitter, which a Goexit there ends.
			var err error = errors.New("not returned")
			awaitReturn(t, "the dropping Invoke", goRun(func() { err = f.Invoke(n) }))
			if m.name != "goexit" && err != nil {
				t.Fatalf("Invoke = %v after a panicking discard handler, want nil", err)
			}
			close(release)
			awaitReturn(t, "Wait", goRun(f.Wait))
			if len(dropped) != 1 || dropped[0] != 0 {
				t.Fatalf("discard handler got %v, want [0]", dropped)
			}
			starts := int(startedCalls.Load()) // the holding call's included
			misbehaved := starts / 4
			var ran int
			for i := range calls {
				c := int(calls[i].Load())
				if c > 1 || (i == 0 && c != 0) {
					t.Fatalf("argument %d called %d times", i, c)
				}
				ran += c
			}
			s := f.Stats()
			wantRan := n // 1..n: the n+1 calls accepted after the holding one, less the dropped
			if m.name == "goexit" {
				wantRan -= misbehaved
			} else {
				waitFor(t, "the panic handler", func() bool { return panics.len() == misbehaved+1 })
			}
			if ran != wantRan || s.Discarded != 1 || s.Accepted != n+2 {
				t.Fatalf("%d calls ran, want %d (%d misbehaved); Stats %+v", ran, wantRan, misbehaved, s)
			}
			idleIdentity(t, "funcpool", s)
		})
	}
}

// TestAdvCallbackCtxSeenEndedSkipsTheFunction attacks "If that context ends before a worker
// takes the function, the function never runs" and "From the contexts of package context it
// ends in the same step as its parent" (package documentation, "A task's life"): a goroutine
// that has seen ctx.Done() closed, by a cancel on another goroutine, and only then lets the
// worker go, must find the group's, Results' and GoContext's functions skipped.
func TestAdvCallbackCtxSeenEndedSkipsTheFunction(t *testing.T) {
	p := advCbPool(t, 1)
	rounds := 2000
	if testing.Short() {
		rounds = 500
	}
	var ran atomic.Int32
	for range rounds {
		task, started, release := blocker()
		must(t, p.Submit(task))
		<-started
		ctx, cancel := context.WithCancel(context.Background())
		g, _ := p.Group(ctx)
		g.Go(func(context.Context) error { ran.Add(1); return nil })
		r, _ := crew.NewResults[int](ctx, p)
		r.Go(func(context.Context) (int, error) { ran.Add(1); return 1, nil })
		f := crew.GoContext(ctx, p, func(context.Context) (int, error) { ran.Add(1); return 1, nil })
		go cancel()
		<-ctx.Done()
		close(release)
		if err := returnsWithin(t, "Group.Wait", g.Wait); !errors.Is(err, context.Canceled) {
			t.Errorf("Group.Wait = %v, want context.Canceled", err)
		}
		if err := returnsWithin(t, "Results.Wait", func() error { _, err := r.Wait(); return err }); !errors.Is(err, context.Canceled) {
			t.Errorf("Results.Wait = %v, want context.Canceled", err)
		}
		if err := returnsWithin(t, "Future.Wait", func() error { _, err := f.Wait(); return err }); !errors.Is(err, context.Canceled) {
			t.Errorf("Future.Wait = %v, want context.Canceled", err)
		}
		if t.Failed() {
			break
		}
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("%d functions ran after their context was seen ended", n)
	}
	p.Wait()
	idleIdentity(t, "pool", p.Stats())
}

// TestAdvCallbackRejectedHookGoexitEndsTheSubmitterAndWaitReturns attacks "a Queued or
// Rejected hook ends the submitter inside its submit, and the task is not accepted and never
// runs (a function of Group.Go, Group.TryGo, Results.Go, Map or ForEach then counts as one that
// called runtime.Goexit, so Wait returns)" on a full non-blocking sub-pool of a priority
// sub-pool.
func TestAdvCallbackRejectedHookGoexitEndsTheSubmitterAndWaitReturns(t *testing.T) {
	doors := map[string]func(p *crew.Pool, fn func()) (submit func(), wait func() error){
		"Group.Go": func(p *crew.Pool, fn func()) (func(), func() error) {
			g, _ := p.Group(context.Background())
			return func() { g.Go(func(context.Context) error { fn(); return nil }) }, g.Wait
		},
		"Group.TryGo": func(p *crew.Pool, fn func()) (func(), func() error) {
			g, _ := p.GroupAll(context.Background())
			return func() { g.TryGo(func(context.Context) error { fn(); return nil }) }, g.Wait
		},
		"Results.Go": func(p *crew.Pool, fn func()) (func(), func() error) {
			r, _ := crew.NewResults[int](context.Background(), p)
			return func() { r.Go(func(context.Context) (int, error) { fn(); return 1, nil }) },
				func() error { _, err := r.Wait(); return err }
		},
		"Map": func(p *crew.Pool, fn func()) (func(), func() error) {
			var err error
			return func() {
					_, err = crew.Map(context.Background(), p, []int{1}, func(context.Context, int) (int, error) { fn(); return 1, nil })
				}, func() error {
					return err
				}
		},
	}
	for name, door := range doors {
		t.Run(name, func(t *testing.T) {
			var goexits atomic.Int32
			root, mid, leaf := subSubTree(t, crew.WithQueueSize(1), crew.WithNonBlocking(), crew.WithHooks(crew.Hooks{
				Rejected: func(error) { goexits.Add(1); runtime.Goexit() },
			}))
			task, started, release := blocker()
			for range 2 {
				must(t, leaf.Submit(task))
				<-started
			}
			must(t, leaf.Submit(func() {})) // the queue is full now
			var ran atomic.Int32
			submit, wait := door(leaf, func() { ran.Add(1) })
			returned := false
			awaitReturn(t, "the refused submit", goRun(func() { submit(); returned = true }))
			if returned || goexits.Load() != 1 {
				t.Fatalf("submit returned %v, Rejected called %d times; want the submitter ended once", returned, goexits.Load())
			}
			close(release)
			if name == "Map" {
				// Map's own goroutine was the submitter: it ended, and returned nothing.
				awaitReturn(t, "root.Wait", goRun(root.Wait))
			} else {
				err := returnsWithin(t, "Wait", wait)
				if err == nil || !strings.Contains(err.Error(), "Goexit") {
					t.Fatalf("Wait = %v, want an error naming Goexit", err)
				}
			}
			awaitReturn(t, "root.Wait", goRun(root.Wait))
			if ran.Load() != 0 {
				t.Fatalf("the refused function ran %d times", ran.Load())
			}
			for pname, p := range map[string]*crew.Pool{"root": root, "mid": mid, "leaf": leaf} {
				idleIdentity(t, pname, p.Stats())
			}
			if s := leaf.Stats(); s.Rejected != 1 {
				t.Fatalf("leaf Stats %+v: want the refusal counted once", s)
			}
		})
	}
}
