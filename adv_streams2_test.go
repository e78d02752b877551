package crew_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// seq2Run is one range over a stream: the results in the order yielded, and the errors.
type seq2Run struct {
	vals []int
	errs []error
}

// seq2Range ranges over seq, calling body (if not nil) after each result; body returning false
// breaks. It fails t unless the range ends within 10 s.
func seq2Range(t *testing.T, seq iter.Seq2[int, error], body func(v int, err error) bool) seq2Run {
	t.Helper()
	var r seq2Run
	awaitReturn(t, "the range", goRun(func() {
		for v, err := range seq {
			if err != nil {
				r.errs = append(r.errs, err)
			} else {
				r.vals = append(r.vals, v)
			}
			if body != nil && !body(v, err) {
				break
			}
		}
	}))
	return r
}

// seq2Starts records when the calls of a range start, so that a test can check that none
// starts after the range has ended.
type seq2Starts struct {
	ended atomic.Bool
	late  atomic.Int64
	ran   atomic.Int64
}

func (s *seq2Starts) start() {
	s.ran.Add(1)
	if s.ended.Load() {
		s.late.Add(1)
	}
}

// seq2Idle waits until every pool given is idle (nothing running or waiting), then checks the
// identity Accepted = Completed + Panicked + Discarded + Returned + Skipped on each.
func seq2Idle(t *testing.T, what string, pools ...*crew.Pool) {
	t.Helper()
	for i, p := range pools {
		awaitStats(t, p, fmt.Sprintf("%s: pool %d idle", what, i), func(s crew.Stats) bool {
			return s.Running == 0 && s.Waiting == 0 &&
				s.Accepted == s.Completed+s.Panicked+s.Discarded+s.Returned+s.Skipped
		})
		idleIdentity(t, fmt.Sprintf("%s: pool %d", what, i), p.Stats())
	}
}

// Breaking out of a range while its pool is paused, with calls still queued: the range ends
// once the pool is resumed; the calls still queued then are skipped (their context ended with
// the range), none starts after the range statement has ended, and every accepted call is
// accounted for, on the pool paused and on the pools around it.
func TestAdvSeq2BreakOnAPausedPoolSkipsTheQueuedCallsOnResume(t *testing.T) {
	for _, m := range seqModes {
		for _, shape := range []string{"root", "sub", "sub-of-paused-parent"} {
			t.Run(m.name+"/"+shape, func(t *testing.T) {
				root := crew.New(2)
				t.Cleanup(root.StopAndWait) // after holdWorkers' release
				p, pause := root, root
				switch shape {
				case "sub":
					p = root.Sub(2, crew.WithPriority(2))
					pause = p
				case "sub-of-paused-parent":
					p = root.Sub(2, crew.WithPriority(-1))
				}
				// One worker of root is held, so value 1 waits in the queue behind value 0,
				// which pauses the pool before it returns.
				release := holdWorkers(t, plainPool{root}, 1, 0)
				var st seq2Starts
				seq := m.mapSeq(context.Background(), p, countTo(100), func(ctx context.Context, v int) (int, error) {
					st.start()
					if v == 0 {
						pause.Pause()
					}
					return v, nil
				})
				broke := make(chan struct{})
				resumed := goRun(func() {
					<-broke
					time.Sleep(5 * time.Millisecond) // not needed for correctness: lets finish wait
					pause.Resume()
				})
				r := seq2Range(t, seq, func(v int, err error) bool {
					close(broke)
					return false
				})
				st.ended.Store(true)
				<-resumed
				if len(r.errs) != 0 || len(r.vals) != 1 || r.vals[0] != 0 {
					t.Fatalf("range yielded %v, errors %v; want the result of value 0 alone", r.vals, r.errs)
				}
				release()
				root.Wait()
				if l := st.late.Load(); l != 0 {
					t.Fatalf("%d calls started after the range had ended", l)
				}
				seq2Idle(t, "after the break", root, p)
			})
		}
	}
}

// seq2Ender is a way for a stream to end with calls still queued behind a rate limit: a
// break in the loop body, or a failure of a call that skips the calls still queued
// (MapSeqUnordered, Map, ForEach). run runs it on p with fn as the function and returns the
// results and errors.
type seq2Ender struct {
	name string
	fail bool // fn fails at value 0; else the body breaks after the first result
	run  func(p *crew.Pool, fn func(context.Context, int) (int, error), body func()) ([]int, []error)
}

func seq2Enders() []seq2Ender {
	var out []seq2Ender
	for _, m := range seqModes {
		ranger := func(p *crew.Pool, fn func(context.Context, int) (int, error), body func()) ([]int, []error) {
			var r seq2Run
			for v, err := range m.mapSeq(context.Background(), p, countTo(100), fn) {
				if err != nil {
					r.errs = append(r.errs, err)
				} else {
					r.vals = append(r.vals, v)
				}
				if body != nil {
					body()
				}
				break
			}
			return r.vals, r.errs
		}
		out = append(out, seq2Ender{m.name + "/break", false, ranger})
		if !m.ordered { // MapSeq's failure skips nothing: the earlier calls still run
			out = append(out, seq2Ender{m.name + "/failure", true, ranger})
		}
	}
	out = append(out, seq2Ender{"Map/failure", true, func(p *crew.Pool, fn func(context.Context, int) (int, error), _ func()) ([]int, []error) {
		_, err := crew.Map(context.Background(), p, []int{0, 1, 2, 3}, fn)
		return nil, []error{err}
	}}, seq2Ender{"ForEach/failure", true, func(p *crew.Pool, fn func(context.Context, int) (int, error), _ func()) ([]int, []error) {
		err := crew.ForEach(context.Background(), p, countTo(4), func(ctx context.Context, v int) error { _, err := fn(ctx, v); return err })
		return nil, []error{err}
	}})
	return out
}

// seq2EndUnderAnEmptyRate runs e on p, whose rate limit (or its parent's) gives one token at
// once and then one every 100 s, so that value 0 starts and values 1 to 3 wait for tokens.
// The stream ends with them queued (after the worker that ran value 0 has looked at the
// queue and found no token: parked is p's root, checked for nothing running), and must end at
// once: WithRateLimit promises that a function that will not start takes no token and leaves
// the queue as soon as its turn comes. None of them runs; all three count in Skipped.
func seq2EndUnderAnEmptyRate(t *testing.T, root, p *crew.Pool, e seq2Ender) {
	t.Helper()
	var ran atomic.Int64
	boom := errors.New("boom")
	idleRoot := func() {
		awaitStats(t, root, "the worker of value 0 done", func(s crew.Stats) bool { return s.Running == 0 })
		// Let that worker look at the queue, find no token and park: the state the break
		// must handle (a shorter wait only makes the test pass more often).
		time.Sleep(10 * time.Millisecond)
	}
	var vals []int
	var errs []error
	awaitReturn(t, e.name, goRun(func() {
		vals, errs = e.run(p, func(ctx context.Context, v int) (int, error) {
			ran.Add(1)
			awaitStats(t, p, "three values queued", func(s crew.Stats) bool { return s.Waiting >= 3 })
			if e.fail {
				return 0, boom
			}
			return v, nil
		}, idleRoot)
	}))
	if e.fail && (len(vals) != 0 || len(errs) != 1 || !errors.Is(errs[0], boom)) {
		t.Fatalf("%s: results %v, errors %v; want boom alone", e.name, vals, errs)
	}
	if !e.fail && (len(vals) != 1 || vals[0] != 0 || len(errs) != 0) {
		t.Fatalf("%s: results %v, errors %v; want value 0 alone", e.name, vals, errs)
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	if n := ran.Load(); n != 1 {
		t.Fatalf("%d calls ran, want 1 (the others were skipped)", n)
	}
	if s := p.Stats(); s.Skipped != 3 {
		t.Fatalf("Stats = %+v, want Skipped 3", s)
	}
	seq2Idle(t, "after the stream", root, p)
}

// A failure in a call cancels the calls' context on the worker, before that worker looks at
// the queue again: the calls still queued behind an empty rate limit are skipped without a
// token, and MapSeqUnordered, Map and ForEach end at once with the failure, having run no
// other call.
func TestAdvSeq2FailureUnderAnEmptyRateLimitSkipsWithoutTokens(t *testing.T) {
	for _, e := range seq2Enders() {
		if !e.fail {
			continue
		}
		t.Run(e.name, func(t *testing.T) {
			root := crew.New(4, crew.WithRateLimit(0.01, 1))
			defer root.StopAndWait()
			seq2EndUnderAnEmptyRate(t, root, root, e)
		})
	}
}

// A break once the worker that ran value 0 has gone idle: the calls still queued behind the
// empty rate limit are doomed, but nothing looks at the queue again until the next token is
// due, so the range statement waits for the rate.
func TestAdvSeq2BreakUnderAnEmptyRateLimitEndsWithoutWaitingForAToken(t *testing.T) {
	for _, e := range seq2Enders() {
		if e.fail {
			continue
		}
		t.Run(e.name, func(t *testing.T) {
			root := crew.New(4, crew.WithRateLimit(0.01, 1))
			defer root.StopAndWait()
			seq2EndUnderAnEmptyRate(t, root, root, e)
		})
	}
}

// The same on a sub-pool under its parent's rate limit: the calls skipped in the sub-pool's
// queue take no token, so they wait for none of the parent's.
func TestAdvSeq2SkippedCallsOfASubPoolTakeNoTokenOfTheParent(t *testing.T) {
	for _, e := range seq2Enders() {
		t.Run(e.name, func(t *testing.T) {
			root := crew.New(4, crew.WithRateLimit(0.01, 1))
			defer root.StopAndWait()
			seq2EndUnderAnEmptyRate(t, root, root.Sub(4, crew.WithPriority(1)), e)
		})
	}
}

// StopNow called by a call while the next value waits in the queue: StopNow hands back the
// plain tasks only (the stream's calls are internal), the queued call fails with ErrStopped,
// and the sequence yields the results before it (in the order of in for MapSeq, in time for
// MapSeqUnordered), then ErrStopped once, and ends. Every accepted task is accounted for, the ones taken out in Returned.
func TestAdvSeq2StopNowFromACallYieldsEarlierResultsThenErrStopped(t *testing.T) {
	for _, m := range seqModes {
		for _, shape := range []string{"root", "sub-stopped", "sub-root-stopped"} {
			t.Run(m.name+"/"+shape, func(t *testing.T) {
				root := crew.New(2)
				t.Cleanup(root.StopAndWait) // after holdWorkers' release
				p, stopper := root, root
				switch shape {
				case "sub-stopped":
					p = root.Sub(2, crew.WithPriority(1))
					stopper = p
				case "sub-root-stopped":
					p = root.Sub(2, crew.WithPriority(1))
				}
				release := holdWorkers(t, plainPool{root}, 1, 0)
				var handed []func()
				var pulled atomic.Int64
				var plainRan atomic.Int64
				seq := m.mapSeq(context.Background(), p, count(-1, &pulled), func(ctx context.Context, v int) (int, error) {
					if v == 0 {
						awaitStats(t, p, "value 1 queued", func(s crew.Stats) bool { return s.Waiting >= 1 })
						for range 2 {
							must(t, p.Submit(func() { plainRan.Add(1) }))
						}
						handed = stopper.StopNow()
					}
					return v, nil
				})
				r := seq2Range(t, seq, nil)
				// MapSeq yields value 0, which comes before the failure in the order of in;
				// MapSeqUnordered yields the failure alone, since value 1 failed (inside
				// StopNow) before value 0 returned.
				wantVals := 1
				if !m.ordered {
					wantVals = 0
				}
				if len(r.vals) != wantVals || (wantVals == 1 && r.vals[0] != 0) || len(r.errs) != 1 || !errors.Is(r.errs[0], crew.ErrStopped) {
					t.Fatalf("range yielded %v, errors %v; want %d results of value 0, then ErrStopped", r.vals, r.errs, wantVals)
				}
				if len(handed) != 2 {
					t.Fatalf("StopNow handed back %d tasks, want the 2 plain ones", len(handed))
				}
				if n := pulled.Load(); n > 3 {
					t.Fatalf("%d values pulled, want at most W+1 = 3", n)
				}
				release()
				awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
				if n := plainRan.Load(); n != 0 {
					t.Fatalf("%d plain tasks StopNow handed back ran", n)
				}
				if s := p.Stats(); s.Returned != 3 {
					t.Fatalf("Stats = %+v, want Returned 3 (two plain tasks, one call)", s)
				}
				seq2Idle(t, "after StopNow", root, p)
			})
		}
	}
}

// A context that ends mid-stream, while a value waits in the queue: pulling stops, the queued
// call is skipped (it never runs, counted in Skipped), the results before it are yielded in
// order, and the range ends with an error that matches the context's end (ctx.Err() or its
// cause). Map and ForEach likewise return an error matching the context's end.
func TestAdvSeq2ContextEndingMidStreamSkipsTheQueuedCall(t *testing.T) {
	cause := errors.New("the caller gave up")
	type doer struct {
		name string
		run  func(ctx context.Context, p *crew.Pool, fn func(context.Context, int) (int, error)) ([]int, []error)
	}
	doers := []doer{
		{"Map", func(ctx context.Context, p *crew.Pool, fn func(context.Context, int) (int, error)) ([]int, []error) {
			out, err := crew.Map(ctx, p, []int{0, 1, 2, 3}, fn)
			return out, []error{err}
		}},
		{"ForEach", func(ctx context.Context, p *crew.Pool, fn func(context.Context, int) (int, error)) ([]int, []error) {
			err := crew.ForEach(ctx, p, countTo(4), func(ctx context.Context, v int) error { _, err := fn(ctx, v); return err })
			return nil, []error{err}
		}},
	}
	for _, m := range seqModes {
		doers = append(doers, doer{m.name, func(ctx context.Context, p *crew.Pool, fn func(context.Context, int) (int, error)) ([]int, []error) {
			var r seq2Run
			for v, err := range m.mapSeq(ctx, p, countTo(4), fn) {
				if err != nil {
					r.errs = append(r.errs, err)
				} else {
					r.vals = append(r.vals, v)
				}
			}
			return r.vals, r.errs
		}})
	}
	for _, d := range doers {
		for _, sub := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sub=%v", d.name, sub), func(t *testing.T) {
				root := crew.New(2)
				t.Cleanup(root.StopAndWait) // after holdWorkers' release
				p := root
				if sub {
					p = root.Sub(2, crew.WithTaskTimeout(time.Minute))
				}
				release := holdWorkers(t, plainPool{root}, 1, 0)
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				var ran atomic.Int64
				var vals []int
				var errs []error
				awaitReturn(t, d.name, goRun(func() {
					vals, errs = d.run(ctx, p, func(_ context.Context, v int) (int, error) {
						ran.Add(1)
						if v == 0 {
							awaitStats(t, p, "value 1 queued", func(s crew.Stats) bool { return s.Waiting >= 1 })
							cancel(cause)
						}
						return v + 100, nil
					})
				}))
				if n := ran.Load(); n != 1 {
					t.Fatalf("%d calls ran, want 1: the queued one is skipped", n)
				}
				if len(errs) != 1 || !(errors.Is(errs[0], cause) || errors.Is(errs[0], context.Canceled)) {
					t.Fatalf("%s: errors %v, want one matching the context's end", d.name, errs)
				}
				t.Logf("%s: error %v", d.name, errs[0])
				switch d.name {
				case "Map":
					if len(vals) != 4 || vals[0] != 100 || vals[1] != 0 {
						t.Fatalf("Map = %v, want [100 0 0 0]", vals)
					}
				case "MapSeq", "MapSeqUnordered":
					if len(vals) != 1 || vals[0] != 100 {
						t.Fatalf("%s yielded %v, want [100]", d.name, vals)
					}
				}
				release()
				root.Wait()
				if s := p.Stats(); s.Skipped != 1 {
					t.Fatalf("Stats = %+v, want Skipped 1", s)
				}
				seq2Idle(t, "after the end", root, p)
			})
		}
	}
}

// seq2Caller is one of the four ways to apply fn to the values 0..n-1 on p, reduced to the
// results (in the order given, or yielded) and the errors.
type seq2Caller struct {
	name    string
	ordered bool // results come in the order of in
	stream  bool // MapSeq or MapSeqUnordered: results are the ones yielded
	run     func(ctx context.Context, p *crew.Pool, n int, fn func(context.Context, int) (int, error)) ([]int, []error)
}

func seq2Callers() []seq2Caller {
	out := []seq2Caller{
		{"Map", true, false, func(ctx context.Context, p *crew.Pool, n int, fn func(context.Context, int) (int, error)) ([]int, []error) {
			in := make([]int, n)
			for i := range in {
				in[i] = i
			}
			r, err := crew.Map(ctx, p, in, fn)
			return r, []error{err}
		}},
		{"ForEach", false, false, func(ctx context.Context, p *crew.Pool, n int, fn func(context.Context, int) (int, error)) ([]int, []error) {
			err := crew.ForEach(ctx, p, countTo(n), func(ctx context.Context, v int) error { _, err := fn(ctx, v); return err })
			return nil, []error{err}
		}},
	}
	for _, m := range seqModes {
		out = append(out, seq2Caller{m.name, m.ordered, true, func(ctx context.Context, p *crew.Pool, n int, fn func(context.Context, int) (int, error)) ([]int, []error) {
			var r seq2Run
			for v, err := range m.mapSeq(ctx, p, countTo(n), fn) {
				if err != nil {
					r.errs = append(r.errs, err)
				} else {
					r.vals = append(r.vals, v)
				}
			}
			return r.vals, r.errs
		}})
	}
	return out
}

// seq2Shape is a pool for a stream to run on, in its tree: root is the pool to stop and wait
// for, p the one the stream uses.
type seq2Shape struct {
	name string
	make func(handler crew.Option) (root, p *crew.Pool)
}

var seq2Shapes = []seq2Shape{
	{"plain", func(h crew.Option) (*crew.Pool, *crew.Pool) { p := crew.New(3, h); return p, p }},
	{"sub-priority-under-rate", func(h crew.Option) (*crew.Pool, *crew.Pool) {
		root := crew.New(3, h, crew.WithRateLimit(20000, 3))
		return root, root.Sub(2, crew.WithPriority(1))
	}},
	{"task-timeout", func(h crew.Option) (*crew.Pool, *crew.Pool) {
		p := crew.New(3, h, crew.WithTaskTimeout(time.Minute))
		return p, p
	}},
	{"adaptive", func(h crew.Option) (*crew.Pool, *crew.Pool) {
		p := crew.New(4, h, crew.WithAdaptiveLimit(1))
		return p, p
	}},
	{"cpus-sub", func(h crew.Option) (*crew.Pool, *crew.Pool) {
		root := crew.New(crew.CPUs, h)
		return root, root.Sub(crew.CPUs, crew.WithPriority(-2))
	}},
}

// A call that calls runtime.Goexit or panic(nil) fails its stream like an error: Map and
// ForEach return an error (a *PanicError for panic(nil)), MapSeq yields every result before
// it in the order of in and then the failure once, MapSeqUnordered the failure once; neither
// reaches the pool's panic handler; every accepted call is accounted for, on every shape of
// pool.
func TestAdvSeq2GoexitAndPanicNilInACallFailItsStream(t *testing.T) {
	for _, sh := range seq2Shapes {
		for _, c := range seq2Callers() {
			for _, how := range []string{"goexit", "panic-nil"} {
				t.Run(sh.name+"/"+c.name+"/"+how, func(t *testing.T) {
					var handled atomic.Int64
					root, p := sh.make(crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }))
					defer root.StopAndWait()
					var vals []int
					var errs []error
					awaitReturn(t, c.name, goRun(func() {
						vals, errs = c.run(context.Background(), p, 8, func(ctx context.Context, v int) (int, error) {
							if v == 3 {
								if how == "goexit" {
									runtime.Goexit()
								}
								panic(nil)
							}
							return v + 10, nil
						})
					}))
					if len(errs) != 1 || errs[0] == nil {
						t.Fatalf("%s: errors %v, want one failure", c.name, errs)
					}
					var pe *crew.PanicError
					if how == "panic-nil" && !errors.As(errs[0], &pe) {
						t.Fatalf("%s: error %v (%T), want a *PanicError", c.name, errs[0], errs[0])
					}
					if how == "goexit" && errors.As(errs[0], &pe) {
						t.Fatalf("%s: error %v is a *PanicError for a runtime.Goexit", c.name, errs[0])
					}
					switch {
					case c.name == "Map":
						// A call still queued at the failure is skipped: zero, like index 3.
						for i, v := range vals {
							if (v != 0 && v != i+10) || (i == 3 && v != 0) {
								t.Fatalf("Map = %v, want i+10 or 0 at each index i, 0 at index 3", vals)
							}
						}
					case c.stream && c.ordered:
						if fmt.Sprint(vals) != "[10 11 12]" {
							t.Fatalf("MapSeq yielded %v before the failure, want [10 11 12]", vals)
						}
					case c.stream:
						seen := map[int]bool{}
						for _, v := range vals {
							if v < 10 || v > 17 || v == 13 || seen[v] {
								t.Fatalf("MapSeqUnordered yielded %v", vals)
							}
							seen[v] = true
						}
					}
					awaitReturn(t, "Wait", goRun(root.Wait))
					if n := handled.Load(); n != 0 {
						t.Fatalf("the panic handler was called %d times", n)
					}
					seq2Idle(t, "after the failure", root, p)
				})
			}
		}
	}
}

// Streams nested inside a function of the pool, made from the context crew gave it, complete
// on a pool of one worker (waits that help): MapSeq whose calls run Map and ForEach on the
// same pool, with a queue of one, under a rate limit, under a pause storm, and from a
// function of a sub-pool with a priority nesting on its parent and on itself. MapSeq keeps the
// order, an inner MapSeqUnordered that breaks early leaves nothing behind, and every pool is
// accounted for once idle.
func TestAdvSeq2NestedStreamsOnAPoolOfOneComplete(t *testing.T) {
	type tree struct{ root, outer, inner *crew.Pool }
	shapes := []struct {
		name  string
		make  func() tree
		storm bool
	}{
		{"queue-of-one", func() tree { p := crew.New(1, crew.WithQueueSize(1)); return tree{p, p, p} }, false},
		{"rate", func() tree { p := crew.New(1, crew.WithRateLimit(20000, 2)); return tree{p, p, p} }, false},
		{"pause-storm", func() tree { p := crew.New(1); return tree{p, p, p} }, true},
		{"sub-on-parent", func() tree {
			p := crew.New(1, crew.WithQueueSize(1))
			return tree{p, p.Sub(1, crew.WithPriority(2)), p}
		}, false},
		{"sub-on-itself", func() tree {
			p := crew.New(1)
			s := p.Sub(1, crew.WithPriority(-1), crew.WithQueueSize(1))
			return tree{p, s, s}
		}, true},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			tr := sh.make()
			defer tr.root.StopAndWait()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if sh.storm {
				pauseStorm(&wg, stop, 200*time.Microsecond, tr.root, tr.outer)
			}
			defer func() { close(stop); wg.Wait() }()
			n := 6
			if testing.Short() {
				n = 4
			}
			g, _ := tr.outer.Group(context.Background())
			for range 2 {
				g.Go(func(ctx context.Context) error {
					i := 0
					for v, err := range crew.MapSeq(ctx, tr.inner, countTo(n), func(ctx context.Context, v int) (int, error) {
						out, err := crew.Map(ctx, tr.inner, []int{v, v + 1}, func(_ context.Context, x int) (int, error) { return 2 * x, nil })
						if err != nil {
							return 0, err
						}
						var count atomic.Int64
						if err := crew.ForEach(ctx, tr.inner, countTo(3), func(context.Context, int) error { count.Add(1); return nil }); err != nil {
							return 0, err
						}
						if count.Load() != 3 {
							return 0, fmt.Errorf("ForEach ran %d of 3", count.Load())
						}
						taken := 0
						for _, err := range crew.MapSeqUnordered(ctx, tr.inner, countTo(100), func(_ context.Context, x int) (int, error) { return x, nil }) {
							if err != nil {
								return 0, err
							}
							if taken++; taken == 2 {
								break
							}
						}
						return out[0] + out[1], nil
					}) {
						if err != nil {
							return err
						}
						if v != 4*i+2 {
							return fmt.Errorf("MapSeq yielded %d for value %d, want %d", v, i, 4*i+2)
						}
						i++
					}
					if i != n {
						return fmt.Errorf("MapSeq yielded %d results, want %d", i, n)
					}
					return nil
				})
			}
			if err := returnsWithin(t, "the nested streams", g.Wait); err != nil {
				t.Fatal(err)
			}
			close(stop)
			wg.Wait()
			stop = make(chan struct{})
			awaitReturn(t, "Wait", goRun(tr.root.Wait))
			seq2Idle(t, "after the nested streams", tr.root, tr.outer, tr.inner)
		})
	}
}

// Priorities hold for Map's calls: on a parent of one worker, with a Map on a sub-pool of a
// higher level and one on a sub-pool of a lower level both queued, every call of the higher
// one starts before any of the lower one (whichever came first), and FIFO holds within each.
func TestAdvSeq2MapOnAHigherLevelRunsBeforeALowerOne(t *testing.T) {
	root := crew.New(1)
	t.Cleanup(root.StopAndWait)
	high := root.Sub(8, crew.WithPriority(3))
	low := root.Sub(8, crew.WithPriority(1))
	release := holdWorkers(t, plainPool{root}, 1, 0)
	var mu sync.Mutex
	var order []string
	fn := func(name string) func(context.Context, int) (int, error) {
		return func(_ context.Context, v int) (int, error) {
			mu.Lock()
			order = append(order, fmt.Sprintf("%s%d", name, v))
			mu.Unlock()
			return v, nil
		}
	}
	in := []int{0, 1, 2, 3, 4, 5, 6, 7}
	var lowErr, highErr error
	lowDone := goRun(func() { _, lowErr = crew.Map(context.Background(), low, in, fn("L")) })
	awaitStats(t, low, "the low Map queued", func(s crew.Stats) bool { return s.Accepted == 8 })
	highDone := goRun(func() { _, highErr = crew.Map(context.Background(), high, in, fn("H")) })
	awaitStats(t, high, "the high Map queued", func(s crew.Stats) bool { return s.Accepted == 8 })
	release()
	awaitReturn(t, "the low Map", lowDone)
	awaitReturn(t, "the high Map", highDone)
	if lowErr != nil || highErr != nil {
		t.Fatalf("Map errors: %v, %v", lowErr, highErr)
	}
	want := "[H0 H1 H2 H3 H4 H5 H6 H7 L0 L1 L2 L3 L4 L5 L6 L7]"
	if got := fmt.Sprint(order); got != want {
		t.Fatalf("calls started in the order %s, want %s", got, want)
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	seq2Idle(t, "after the Maps", root, high, low)
}

// Weighted tasks submitted from the loop body beside a running stream: the weights of the
// running tasks (the stream's calls weigh 1) never sum above the limit, on the pool and on a
// sub-pool of it, and the stream still yields every result in order.
func TestAdvSeq2WeightedTasksBesideAStreamStayWithinTheLimit(t *testing.T) {
	for _, sub := range []bool{false, true} {
		t.Run(fmt.Sprintf("sub=%v", sub), func(t *testing.T) {
			root := crew.New(4)
			defer root.StopAndWait()
			heavy := root
			if sub {
				heavy = root.Sub(4, crew.WithPriority(1))
			}
			var m weightMeter
			n := 300
			if testing.Short() {
				n = 100
			}
			i := 0
			r := seq2Range(t, crew.MapSeq(context.Background(), root, countTo(n), func(_ context.Context, v int) (int, error) {
				m.task(1)()
				return v, nil
			}), func(v int, err error) bool {
				if v != i {
					t.Errorf("MapSeq yielded %d at %d", v, i)
				}
				i++
				switch {
				case v%25 == 0:
					must(t, heavy.SubmitN(4, m.task(4)))
				case v%10 == 0:
					must(t, heavy.SubmitN(3, m.task(3)))
				}
				return true
			})
			if len(r.errs) != 0 || len(r.vals) != n {
				t.Fatalf("MapSeq yielded %d results, errors %v", len(r.vals), r.errs)
			}
			awaitReturn(t, "Wait", goRun(root.Wait))
			if h := m.high.Load(); h > 4 {
				t.Fatalf("running weights summed to %d, above the limit of 4", h)
			}
			seq2Idle(t, "after the stream", root, heavy)
		})
	}
}

// MapSeq's bound W is the pool's limit when the range starts, also when the pool chooses its
// own (WithAdaptiveLimit) or follows GOMAXPROCS (CPUs): at most W values are pulled and not
// yet yielded, and no more calls run at once than the pool's ceiling.
func TestAdvSeq2AdaptiveAndCPUsStreamsHoldAtMostWValues(t *testing.T) {
	shapes := []struct {
		name    string
		make    func() (root, p *crew.Pool)
		ceiling int
	}{
		{"adaptive", func() (*crew.Pool, *crew.Pool) { p := crew.New(6, crew.WithAdaptiveLimit(2)); return p, p }, 6},
		{"cpus", func() (*crew.Pool, *crew.Pool) { p := crew.New(crew.CPUs); return p, p }, runtime.GOMAXPROCS(0)},
		{"adaptive-sub-of-cpus", func() (*crew.Pool, *crew.Pool) {
			root := crew.New(crew.CPUs)
			return root, root.Sub(5, crew.WithAdaptiveLimit(1), crew.WithPriority(1))
		}, min(5, runtime.GOMAXPROCS(0))},
	}
	for _, sh := range shapes {
		for _, m := range seqModes {
			t.Run(sh.name+"/"+m.name, func(t *testing.T) {
				root, p := sh.make()
				defer root.StopAndWait()
				w := int64(p.Stats().MaxWorkers)
				if sh.name == "cpus" && w != int64(runtime.GOMAXPROCS(0)) {
					t.Fatalf("New(CPUs) has MaxWorkers %d, want GOMAXPROCS %d", w, runtime.GOMAXPROCS(0))
				}
				var pulled atomic.Int64
				var hw highWater
				n := int64(0)
				want := int64(200)
				if testing.Short() {
					want = 60
				}
				seq2Range(t, m.mapSeq(context.Background(), p, endless(&pulled), func(_ context.Context, v int) (int, error) {
					hw.enter()
					defer hw.exit()
					time.Sleep(time.Duration(v%4) * 50 * time.Microsecond)
					return v, nil
				}), func(v int, err error) bool {
					if err != nil {
						t.Errorf("error %v", err)
						return false
					}
					// This result is being yielded: n before it were.
					if held := pulled.Load() - n; held > w {
						t.Errorf("%d values pulled and not yet yielded, W is %d", held, w)
						return false
					}
					n++
					return n < want
				})
				if h := hw.high.Load(); int(h) > sh.ceiling {
					t.Fatalf("%d calls ran at once, above the ceiling %d", h, sh.ceiling)
				}
				awaitReturn(t, "Wait", goRun(root.Wait))
				seq2Idle(t, "after the break", root, p)
			})
		}
	}
}

// WithTaskTimeout on the stream's pool: each call's context has its deadline d after that
// call's start, not its submit (a call that waited in the queue longer than d still gets d),
// and a call that returns its context's cause fails the stream with an error that matches
// ErrTaskTimeout and context.DeadlineExceeded and names d: Map and ForEach return it,
// MapSeq yields the results before it in order and then it, MapSeqUnordered yields it once.
func TestAdvSeq2TaskTimeoutCountsFromEachCallsStart(t *testing.T) {
	const d = 40 * time.Millisecond
	for _, c := range seq2Callers() {
		t.Run(c.name, func(t *testing.T) {
			root := crew.New(1)
			defer root.StopAndWait()
			p := root.Sub(1, crew.WithTaskTimeout(d), crew.WithPriority(1))
			var late atomic.Int64 // calls whose deadline was not d after their start
			var vals []int
			var errs []error
			awaitReturn(t, c.name, goRun(func() {
				vals, errs = c.run(context.Background(), p, 3, func(ctx context.Context, v int) (int, error) {
					start := time.Now()
					dl, ok := ctx.Deadline()
					if !ok || !dl.After(start) || dl.Sub(start) > d {
						late.Add(1)
					}
					switch v {
					case 0:
						// Longer than d: value 1 waits in the queue meanwhile.
						time.Sleep(3 * d)
					case 2:
						<-ctx.Done()
						return 0, context.Cause(ctx)
					}
					return v + 10, nil
				})
			}))
			if n := late.Load(); n != 0 {
				t.Fatalf("%d calls started with a deadline not d after their start", n)
			}
			if len(errs) != 1 || !errors.Is(errs[0], crew.ErrTaskTimeout) || !errors.Is(errs[0], context.DeadlineExceeded) ||
				!strings.Contains(errs[0].Error(), d.String()) {
				t.Fatalf("%s: errors %v, want one matching ErrTaskTimeout and DeadlineExceeded that names %v", c.name, errs, d)
			}
			if c.stream && c.ordered && fmt.Sprint(vals) != "[10 11]" {
				t.Fatalf("MapSeq yielded %v before the timeout, want [10 11]", vals)
			}
			if c.name == "Map" && fmt.Sprint(vals) != "[10 11 0]" {
				t.Fatalf("Map = %v, want [10 11 0]", vals)
			}
			awaitReturn(t, "Wait", goRun(root.Wait))
			seq2Idle(t, "after the timeout", root, p)
		})
	}
}

// A Shutdown of the root whose context ends while a stream runs on a sub-pool of a sub-pool:
// Shutdown returns ctx.Err(), the contexts of the calls running end with cause ErrStopped,
// the calls that return it fail the stream with ErrStopped (Map and ForEach return it, the
// sequences yield it once and end), and every pool of the tree is accounted for.
func TestAdvSeq2ShutdownGivingUpMidStreamReachesASubPoolOfASubPool(t *testing.T) {
	for _, c := range seq2Callers() {
		t.Run(c.name, func(t *testing.T) {
			root := crew.New(3)
			mid := root.Sub(2, crew.WithPriority(1))
			leaf := mid.Sub(2, crew.WithTaskTimeout(time.Minute))
			var causes sync.Map
			var errs []error
			done := goRun(func() {
				_, errs = c.run(context.Background(), leaf, 50, func(ctx context.Context, v int) (int, error) {
					<-ctx.Done()
					causes.Store(v, context.Cause(ctx))
					return 0, context.Cause(ctx)
				})
			})
			awaitStats(t, leaf, "two calls running", func(s crew.Stats) bool { return s.Running == 2 })
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			if err := root.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
			}
			awaitReturn(t, c.name, done)
			if len(errs) != 1 || !errors.Is(errs[0], crew.ErrStopped) {
				t.Fatalf("%s: errors %v, want ErrStopped once", c.name, errs)
			}
			n := 0
			causes.Range(func(k, v any) bool {
				n++
				if !errors.Is(v.(error), crew.ErrStopped) {
					t.Errorf("call %v saw cause %v, want ErrStopped", k, v)
				}
				return true
			})
			if n < 2 {
				t.Fatalf("%d calls saw their context end, want at least 2", n)
			}
			awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
			for i, q := range []*crew.Pool{root, mid, leaf} {
				idleIdentity(t, fmt.Sprintf("pool %d", i), q.Stats())
			}
		})
	}
}

// Ranges of every kind over endless sequences on a tree of sub-pools, amid storms of Pause
// and Resize, until the root is stopped: every range then ends, MapSeq having yielded 0, 1,
// 2, ... in order and then ErrStopped once, MapSeqUnordered distinct values and then
// ErrStopped once, ForEach returning ErrStopped; no more calls ran at once than the root's
// highest limit, and every pool is accounted for.
func TestAdvSeq2StormsThenStopEndEveryRangeWithErrStopped(t *testing.T) {
	root := crew.New(4)
	a := root.Sub(3, crew.WithPriority(1))
	b := root.Sub(2, crew.WithPriority(-1), crew.WithRateLimit(50000, 4))
	c := a.Sub(2, crew.WithTaskTimeout(time.Minute))
	pools := []*crew.Pool{root, a, b, c}
	var hw highWater
	fn := func(_ context.Context, v int) (int, error) {
		hw.enter()
		defer hw.exit()
		if v%7 == 0 {
			runtime.Gosched()
		}
		return v, nil
	}
	type outcome struct {
		name    string
		ordered bool
		vals    []int
		errs    []error
	}
	var outs []*outcome
	var ranges []<-chan struct{}
	var progress atomic.Int64
	for i, p := range pools {
		for _, m := range seqModes {
			o := &outcome{name: fmt.Sprintf("%s on pool %d", m.name, i), ordered: m.ordered}
			outs = append(outs, o)
			ranges = append(ranges, goRun(func() {
				var pulled atomic.Int64
				for v, err := range m.mapSeq(context.Background(), p, endless(&pulled), fn) {
					if err != nil {
						o.errs = append(o.errs, err)
						continue
					}
					o.vals = append(o.vals, v)
					progress.Add(1)
				}
			}))
		}
		o := &outcome{name: fmt.Sprintf("ForEach on pool %d", i)}
		outs = append(outs, o)
		ranges = append(ranges, goRun(func() {
			var pulled atomic.Int64
			err := crew.ForEach(context.Background(), p, endless(&pulled), func(ctx context.Context, v int) error {
				_, err := fn(ctx, v)
				progress.Add(1)
				return err
			})
			o.errs = append(o.errs, err)
		}))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	pauseStorm(&wg, stop, 300*time.Microsecond, pools...)
	repeatUntil(&wg, stop, func() {
		root.Resize(1 + int(progress.Load()%4))
		a.Resize(1 + int(progress.Load()%3))
		time.Sleep(200 * time.Microsecond)
	})
	want := int64(3000)
	if testing.Short() {
		want = 600
	}
	waitFor(t, "the ranges to make progress", func() bool { return progress.Load() >= want })
	root.Stop()
	for i, r := range ranges {
		awaitReturn(t, outs[i].name, r)
	}
	close(stop)
	wg.Wait()
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	for _, o := range outs {
		if len(o.errs) != 1 || !errors.Is(o.errs[0], crew.ErrStopped) {
			t.Errorf("%s: errors %v, want ErrStopped once", o.name, o.errs)
		}
		seen := map[int]bool{}
		for i, v := range o.vals {
			if (o.ordered && v != i) || seen[v] {
				t.Errorf("%s: yielded %d at %d (ordered %v) or twice", o.name, v, i, o.ordered)
				break
			}
			seen[v] = true
		}
	}
	if h := hw.high.Load(); h > 4 {
		t.Errorf("%d calls ran at once, above the root's highest limit 4", h)
	}
	for i, p := range pools {
		idleIdentity(t, fmt.Sprintf("pool %d", i), p.Stats())
	}
}

// Breaking out of a range from an endless sequence, on every shape of pool and after the loop
// body shrank the pool: when the range statement ends no call it started runs, and none
// starts afterwards; at most W+1 values were pulled beyond the ones yielded; every call is
// accounted for.
func TestAdvSeq2BreakLeavesNoCallRunningOnEveryShape(t *testing.T) {
	for _, sh := range seq2Shapes {
		for _, m := range seqModes {
			for _, shrink := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/shrink=%v", sh.name, m.name, shrink), func(t *testing.T) {
					root, p := sh.make(crew.WithPanicHandler(func(any, []byte) {}))
					defer root.StopAndWait()
					w := int64(p.Stats().MaxWorkers)
					var st seq2Starts
					var inside atomic.Int64
					var pulled atomic.Int64
					yielded := int64(0)
					r := seq2Range(t, m.mapSeq(context.Background(), p, endless(&pulled), func(ctx context.Context, v int) (int, error) {
						st.start()
						inside.Add(1)
						defer inside.Add(-1)
						if v >= 20 {
							select { // a slow call, in flight at the break, which cancels it
							case <-ctx.Done():
							case <-time.After(time.Second):
							}
						}
						return v, nil
					}), func(v int, err error) bool {
						yielded++
						if yielded == 15 && shrink {
							p.Resize(1)
						}
						return yielded < 20
					})
					st.ended.Store(true)
					if n := inside.Load(); n != 0 {
						t.Fatalf("%d calls still running when the range statement ended", n)
					}
					if len(r.errs) != 0 {
						t.Fatalf("errors %v", r.errs)
					}
					if held := pulled.Load() - yielded; held > w {
						t.Fatalf("%d values pulled beyond the %d yielded, W is %d", held, yielded, w)
					}
					awaitReturn(t, "Wait", goRun(root.Wait))
					if n := st.late.Load(); n != 0 {
						t.Fatalf("%d calls started after the range ended", n)
					}
					seq2Idle(t, "after the break", root, p)
				})
			}
		}
	}
}

// A nested stream on a pool of one worker with a queue of one, whose context (the one crew
// gave the function it runs in, derived from the group's) ends mid-stream: its calls still
// queued, which only its own wait could run, are skipped rather than waited for; the range
// ends with the context's end (ctx.Err() or its cause); the group's other function, still queued, is skipped; and
// nothing is left running or waiting.
func TestAdvSeq2NestedStreamWhoseContextEndsOnAPoolOfOne(t *testing.T) {
	for _, m := range seqModes {
		t.Run(m.name, func(t *testing.T) {
			p := crew.New(1, crew.WithQueueSize(1))
			defer p.StopAndWait()
			cause := errors.New("the request was abandoned")
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			g, _ := p.Group(ctx)
			var ran, second atomic.Int64
			var yielded []int
			var rangeErr error
			g.Go(func(ctx context.Context) error {
				for v, err := range m.mapSeq(ctx, p, countTo(50), func(_ context.Context, v int) (int, error) {
					ran.Add(1)
					if v == 2 {
						cancel(cause)
					}
					return v, nil
				}) {
					if err != nil {
						rangeErr = err
						return err
					}
					yielded = append(yielded, v)
				}
				return nil
			})
			g.Go(func(context.Context) error { second.Add(1); return nil })
			err := returnsWithin(t, "Group.Wait", g.Wait)
			// The range ends with ctx.Err() when no call of it was skipped, with the cause
			// when one was (its outcome); Group.Wait returns what the function returned.
			if !(errors.Is(rangeErr, cause) || errors.Is(rangeErr, context.Canceled)) || !errors.Is(err, rangeErr) {
				t.Fatalf("Group.Wait = %v, range error %v; want the context's end", err, rangeErr)
			}
			if second.Load() != 0 {
				t.Fatal("the group's queued function ran after its context ended")
			}
			if n := ran.Load(); n != 3 {
				t.Logf("%d calls ran", n) // the calls taken before the end: 0, 1, 2 on one slot
			}
			for i, v := range yielded {
				if m.ordered && v != i {
					t.Fatalf("MapSeq yielded %v, not in order", yielded)
				}
			}
			awaitReturn(t, "Wait", goRun(p.Wait))
			seq2Idle(t, "after the end", p)
		})
	}
}

// Stopping a sub-pool mid-range ends the streams on it with ErrStopped (the value it refused
// fails, after the results before it) and leaves the streams on its parent and its sibling
// going to their end; every pool is accounted for.
func TestAdvSeq2StoppingASubPoolEndsOnlyItsStreams(t *testing.T) {
	for _, m := range seqModes {
		t.Run(m.name, func(t *testing.T) {
			root := crew.New(3)
			defer root.StopAndWait()
			doomed := root.Sub(2, crew.WithPriority(1))
			sibling := root.Sub(2, crew.WithPriority(1))
			fn := func(_ context.Context, v int) (int, error) { return v, nil }
			var onDoomed seq2Run
			var pulled atomic.Int64
			doomedDone := goRun(func() {
				for v, err := range m.mapSeq(context.Background(), doomed, endless(&pulled), fn) {
					if err != nil {
						onDoomed.errs = append(onDoomed.errs, err)
						continue
					}
					onDoomed.vals = append(onDoomed.vals, v)
					if v == 100 {
						doomed.Stop()
					}
				}
			})
			n := 500
			if testing.Short() {
				n = 200
			}
			others := map[string]*seq2Run{}
			for name, p := range map[string]*crew.Pool{"root": root, "sibling": sibling} {
				others[name] = &seq2Run{}
				r := seq2Range(t, m.mapSeq(context.Background(), p, countTo(n), fn), nil)
				others[name] = &r
			}
			awaitReturn(t, "the range on the stopped sub-pool", doomedDone)
			if len(onDoomed.errs) != 1 || !errors.Is(onDoomed.errs[0], crew.ErrStopped) {
				t.Fatalf("the stopped sub-pool's range: errors %v, want ErrStopped once", onDoomed.errs)
			}
			for i, v := range onDoomed.vals {
				if m.ordered && v != i {
					t.Fatalf("the stopped sub-pool's range yielded %d at %d", v, i)
				}
			}
			for name, r := range others {
				if len(r.errs) != 0 || len(r.vals) != n {
					t.Fatalf("the range on %s yielded %d of %d, errors %v", name, len(r.vals), n, r.errs)
				}
			}
			awaitReturn(t, "Wait", goRun(root.Wait))
			seq2Idle(t, "after the stop", root, doomed, sibling)
		})
	}
}

// seq2ShutdownUnderAnEmptyRate has a Shutdown give up while a stream's calls wait in p's
// queue behind an empty rate limit (p's own, or its parent's): they are skipped, and a
// function skipped by a Shutdown that gave up takes no token (WithRateLimit), so the range
// ends at once with ErrStopped.
func seq2ShutdownUnderAnEmptyRate(t *testing.T, sub bool) {
	for _, m := range seqModes {
		t.Run(m.name, func(t *testing.T) {
			root := crew.New(4, crew.WithRateLimit(0.01, 1))
			p := root
			if sub {
				p = root.Sub(4, crew.WithPriority(1))
			}
			var errs []error
			done := goRun(func() {
				for _, err := range m.mapSeq(context.Background(), p, countTo(10), func(ctx context.Context, v int) (int, error) {
					<-ctx.Done()
					return 0, context.Cause(ctx)
				}) {
					errs = append(errs, err)
				}
			})
			awaitStats(t, p, "one call running, three queued", func(s crew.Stats) bool { return s.Running == 1 && s.Waiting == 3 })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			if err := root.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
			}
			awaitReturn(t, "the range", done)
			if len(errs) != 1 || !errors.Is(errs[0], crew.ErrStopped) {
				t.Fatalf("the range yielded errors %v, want ErrStopped once", errs)
			}
			awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
			if s := p.Stats(); s.Skipped != 3 {
				t.Fatalf("Stats = %+v, want Skipped 3", s)
			}
			idleIdentity(t, "root", root.Stats())
			idleIdentity(t, "p", p.Stats())
		})
	}
}

// On the root pool: the skipped calls leave the queue without tokens.
func TestAdvSeq2ShutdownGivingUpSkipsQueuedCallsWithoutTokens(t *testing.T) {
	seq2ShutdownUnderAnEmptyRate(t, false)
}

// On a sub-pool under its parent's rate limit.
func TestAdvSeq2ShutdownGivingUpSkipsASubPoolsCallsWithoutParentTokens(t *testing.T) {
	seq2ShutdownUnderAnEmptyRate(t, true)
}

// Resize from the loop body, to CPUs and on a pool that chooses its own limit: from the
// return of Resize the new limit holds for every start (tasks running may finish above it),
// Resize(CPUs) makes MaxWorkers GOMAXPROCS at once, and the range keeps its order and its
// bound W, the limit when it started.
func TestAdvSeq2ResizeFromTheLoopBodyHoldsForEveryStart(t *testing.T) {
	shapes := []struct {
		name string
		make func() *crew.Pool
	}{
		{"plain", func() *crew.Pool { return crew.New(3) }},
		{"adaptive", func() *crew.Pool { return crew.New(6, crew.WithAdaptiveLimit(1)) }},
	}
	for _, sh := range shapes {
		for _, m := range seqModes {
			t.Run(sh.name+"/"+m.name, func(t *testing.T) {
				p := sh.make()
				defer p.StopAndWait()
				w := int64(p.Stats().MaxWorkers)
				var g limitGauge
				g.limit.Store(w)
				var pulled atomic.Int64
				n := int64(0)
				want := int64(300)
				if testing.Short() {
					want = 120
				}
				r := seq2Range(t, m.mapSeq(context.Background(), p, endless(&pulled), func(_ context.Context, v int) (int, error) {
					g.enter()
					defer g.leave()
					if v%5 == 0 {
						time.Sleep(50 * time.Microsecond)
					}
					return v, nil
				}), func(v int, err error) bool {
					if m.ordered && int64(v) != n {
						t.Errorf("MapSeq yielded %d at %d", v, n)
					}
					if held := pulled.Load() - n; held > w {
						t.Errorf("%d values held, W is %d", held, w)
					}
					n++
					switch n {
					case want / 4:
						g.resize(p, 1)
					case want / 2:
						g.limit.Store(int64(max(runtime.GOMAXPROCS(0), int(g.limit.Load()))))
						p.Resize(crew.CPUs)
						if got := p.Stats().MaxWorkers; got != runtime.GOMAXPROCS(0) && sh.name == "plain" {
							t.Errorf("after Resize(CPUs) MaxWorkers = %d, want GOMAXPROCS %d", got, runtime.GOMAXPROCS(0))
						}
					case 3 * want / 4:
						g.resize(p, 2)
					}
					return n < want
				})
				if len(r.errs) != 0 {
					t.Fatalf("errors %v", r.errs)
				}
				if h := g.high.Load(); h > 0 {
					t.Fatalf("a call started with %d more running than the limit", h)
				}
				awaitReturn(t, "Wait", goRun(p.Wait))
				seq2Idle(t, "after the range", p)
			})
		}
	}
}

// A call of a nested stream that calls runtime.Goexit while the range's wait runs it in its
// lent slot, on a pool of one worker: the Goexit ends the goroutine it runs on, the waiting
// function's (help_test.go), so the function ends as one that called Goexit; the range still
// cleans up as it unwinds (no call of it runs after the function has ended), the group's
// Wait reports the Goexit, every call is accounted for, and the pool keeps serving.
func TestAdvSeq2GoexitOfALentCallEndsTheRangingFunctionCleanly(t *testing.T) {
	for _, m := range seqModes {
		for _, how := range []string{"goexit", "panic-nil"} {
			t.Run(m.name+"/"+how, func(t *testing.T) {
				p := crew.New(1, crew.WithQueueSize(1))
				defer p.StopAndWait()
				var st seq2Starts
				g, _ := p.Group(context.Background())
				var bodyAfter atomic.Int64
				g.Go(func(ctx context.Context) error {
					for _, err := range m.mapSeq(ctx, p, countTo(20), func(_ context.Context, v int) (int, error) {
						st.start()
						if v == 2 {
							if how == "goexit" {
								runtime.Goexit()
							}
							panic(nil)
						}
						return v, nil
					}) {
						if err != nil {
							return err
						}
					}
					bodyAfter.Add(1)
					return nil
				})
				err := returnsWithin(t, "Group.Wait", g.Wait)
				st.ended.Store(true)
				var pe *crew.PanicError
				switch how {
				case "goexit":
					if err == nil || !strings.Contains(err.Error(), "Goexit") {
						t.Fatalf("Group.Wait = %v, want the Goexit reported", err)
					}
				default:
					if !errors.As(err, &pe) {
						t.Fatalf("Group.Wait = %v, want a *PanicError", err)
					}
					if bodyAfter.Load() != 0 {
						t.Fatal("the range went on after the failure")
					}
				}
				awaitReturn(t, "Wait", goRun(p.Wait))
				if n := st.late.Load(); n != 0 {
					t.Fatalf("%d calls started after the ranging function ended", n)
				}
				seq2Idle(t, "after the Goexit", p)
				ran := make(chan struct{})
				must(t, p.Submit(func() { close(ran) }))
				awaitReturn(t, "a task after the Goexit", ran)
			})
		}
	}
}

// Shutdown with a context already ended, called from the loop body mid-range: it returns
// ctx.Err() (or nil had the pool exited), the calls in flight see their context end with
// ErrStopped, the range yields the results held (in order for MapSeq, at most W of them) and
// then ErrStopped once, pulling nothing more; every pool of the tree is accounted for.
func TestAdvSeq2ShutdownWithAnEndedContextFromTheLoopBody(t *testing.T) {
	for _, m := range seqModes {
		for _, sub := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sub=%v", m.name, sub), func(t *testing.T) {
				root := crew.New(3)
				p := root
				if sub {
					p = root.Sub(3, crew.WithPriority(2), crew.WithTaskTimeout(time.Minute))
				}
				w := int64(p.Stats().MaxWorkers)
				ended, cancel := context.WithCancel(context.Background())
				cancel()
				var pulled atomic.Int64
				var shutdownErr error
				var atShutdown int64
				n := int64(0)
				r := seq2Range(t, m.mapSeq(context.Background(), p, endless(&pulled), func(ctx context.Context, v int) (int, error) {
					if v > 10 {
						<-ctx.Done() // held until the Shutdown gives up
						if !errors.Is(context.Cause(ctx), crew.ErrStopped) {
							return 0, fmt.Errorf("value %d: cause %v, want ErrStopped", v, context.Cause(ctx))
						}
					}
					return v, nil
				}), func(v int, err error) bool {
					if err != nil {
						return true
					}
					if m.ordered && int64(v) != n {
						t.Errorf("MapSeq yielded %d at %d", v, n)
					}
					n++
					if n == 5 {
						atShutdown = pulled.Load()
						shutdownErr = root.Shutdown(ended)
					}
					return true
				})
				if shutdownErr != nil && !errors.Is(shutdownErr, context.Canceled) {
					t.Fatalf("Shutdown = %v, want ctx.Err() or nil", shutdownErr)
				}
				if len(r.errs) != 1 || !errors.Is(r.errs[0], crew.ErrStopped) {
					t.Fatalf("the range yielded errors %v, want ErrStopped once", r.errs)
				}
				// One value the stopped pool refuses, and one more that the range pulls and
				// drops (TestAdvSeq2ContextEndedByTheLoopBodyStopsPulling).
				if p := pulled.Load(); p > atShutdown+2 {
					t.Fatalf("%d values pulled after the Shutdown gave up, want at most 2", p-atShutdown)
				}
				if int64(len(r.vals)) > 5+w {
					t.Fatalf("%d results yielded, want at most 5 + W = %d", len(r.vals), 5+w)
				}
				awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
				idleIdentity(t, "root", root.Stats())
				idleIdentity(t, "p", p.Stats())
			})
		}
	}
}

// The loop body ends the range's context: "if ctx ends during the range, pulling stops", so
// no value is pulled from in after the body returned (a value pulled then is neither
// processed nor yielded: lost for an in that consumes what it yields, such as a channel).
func TestAdvSeq2ContextEndedByTheLoopBodyStopsPulling(t *testing.T) {
	for _, m := range seqModes {
		t.Run(m.name, func(t *testing.T) {
			p := crew.New(2)
			defer p.StopAndWait()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var pulled atomic.Int64
			var at int64
			n := 0
			r := seq2Range(t, m.mapSeq(ctx, p, count(-1, &pulled), func(_ context.Context, v int) (int, error) { return v, nil }),
				func(v int, err error) bool {
					if n++; n == 5 {
						at = pulled.Load()
						cancel()
					}
					return true
				})
			if len(r.errs) != 1 || !errors.Is(r.errs[0], context.Canceled) {
				t.Fatalf("errors %v, want ctx.Err() once", r.errs)
			}
			if d := pulled.Load() - at; d != 0 {
				t.Fatalf("%d values pulled after the loop body ended ctx", d)
			}
		})
	}
}
