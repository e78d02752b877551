package crew_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

type hookCount struct{ q, s, f, r, d atomic.Int64 }

func (h *hookCount) hooks() crew.Hooks {
	return crew.Hooks{
		Queued:    func(crew.TaskInfo) { h.q.Add(1) },
		Started:   func(crew.TaskInfo) { h.s.Add(1) },
		Finished:  func(crew.TaskInfo) { h.f.Add(1) },
		Rejected:  func(error) { h.r.Add(1) },
		Discarded: func(crew.TaskInfo) { h.d.Add(1) },
	}
}

func (h *hookCount) check(t *testing.T, what string, s crew.Stats, parent bool) {
	t.Helper()
	// A parent's Stats also count its sub-pools' workers, which its hooks do not see.
	if h.s.Load() != h.f.Load() || h.q.Load()-h.r.Load() != h.s.Load() || (!parent && (uint64(h.s.Load()) != s.Completed+s.Panicked || uint64(h.q.Load()) != s.Accepted+uint64(h.r.Load()))) {
		t.Errorf("%s: hooks Queued %d Started %d Finished %d Rejected %d; stats %+v", what, h.q.Load(), h.s.Load(), h.f.Load(), h.r.Load(), s)
	}
}

// nested runs a fork/join tree of depth d with a random primitive per node, on pools chosen
// from ps, each made from the context crew gave the function; it returns the leaves' count.
func nested(ctx context.Context, t *testing.T, ps []*crew.Pool, d int) (int, error) {
	if d == 0 {
		return 1, nil
	}
	// ps is the pool the calling function runs on and those above it, root first: a wait
	// helps only on those. The children of a wait on ps[i] may wait on ps[:i+1].
	i0 := rand.IntN(len(ps))
	p := ps[i0]
	const n = 3
	in := []int{0, 1, 2}
	child := func(ctx context.Context, _ int) (int, error) { return nested(ctx, t, ps[:i0+1], d-1) }
	sum := func(rs []int) int {
		s := 0
		for _, r := range rs {
			s += r
		}
		return s
	}
	switch rand.IntN(8) {
	case 0, 1:
		var g *crew.Group
		var gctx context.Context
		if rand.IntN(2) == 0 {
			g, gctx = p.Group(ctx)
		} else {
			g, gctx = p.GroupAll(ctx)
		}
		_ = gctx
		var total atomic.Int64
		for i := range n {
			g.Go(func(ctx context.Context) error {
				v, err := child(ctx, i)
				total.Add(int64(v))
				return err
			})
		}
		err := g.Wait()
		return int(total.Load()), err
	case 2:
		r, _ := crew.NewResults[int](ctx, p)
		for i := range n {
			r.Go(func(ctx context.Context) (int, error) { return child(ctx, i) })
		}
		rs, err := r.Wait()
		return sum(rs), err
	case 3:
		rs, err := crew.Map(ctx, p, in, child)
		return sum(rs), err
	case 4:
		var total atomic.Int64
		err := crew.ForEach(ctx, p, slices.Values(in), func(ctx context.Context, i int) error {
			v, err := child(ctx, i)
			total.Add(int64(v))
			return err
		})
		return int(total.Load()), err
	case 5:
		s := 0
		for v, err := range crew.MapSeq(ctx, p, slices.Values(in), child) {
			if err != nil {
				return s, err
			}
			s += v
		}
		return s, nil
	case 6:
		s := 0
		for v, err := range crew.MapSeqUnordered(ctx, p, slices.Values(in), child) {
			if err != nil {
				return s, err
			}
			s += v
		}
		return s, nil
	default:
		fs := make([]*crew.Future[int], n)
		for i := range n {
			fs[i] = crew.GoContext(ctx, p, func(ctx context.Context) (int, error) { return child(ctx, i) })
		}
		s := 0
		for _, f := range fs {
			v, err := f.Wait()
			if err != nil {
				return s, err
			}
			s += v
		}
		return s, nil
	}
}

// Waits that help: "nested fork/join of any depth completes, even on New(1) with a queue of
// one"; "A function run in a lent slot is a start like any other: none runs while the pool
// (or a pool above it) is paused, and a rate limit paces them". Under Pause/Resume, rate
// limit and Resize storms, with a sub-pool, hooks and Stats checked.
func TestAmidNestedHelpingWaitsUnderStorms(t *testing.T) {
	for iter := range 6 {
		var hp, hs hookCount
		p := crew.New(1, crew.WithQueueSize(1), crew.WithHooks(hp.hooks()))
		sub := p.Sub(1, crew.WithQueueSize(1), crew.WithHooks(hs.hooks()))
		ps := []*crew.Pool{p, sub}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		if iter%2 == 0 {
			pauseStorm(&wg, stop, 300*time.Microsecond, ps...)
		}
		repeatUntil(&wg, stop, func() {
			if rand.IntN(2) == 0 {
				p.SetRateLimit(50000, 2)
			} else {
				p.SetRateLimit(math.Inf(1), 1)
			}
			p.Resize(1 + rand.IntN(2))
			sub.Resize(1)
			time.Sleep(500 * time.Microsecond)
		})
		const depth = 4
		var got int
		var err error
		done := goRun(func() {
			f := crew.GoContext(context.Background(), sub, func(ctx context.Context) (int, error) {
				return nested(ctx, t, ps, depth)
			})
			got, err = f.Wait()
		})
		werr := within(done, "nested tree")
		close(stop)
		wg.Wait()
		p.Resume()
		sub.Resume()
		p.SetRateLimit(math.Inf(1), 1)
		if werr != nil {
			t.Fatalf("iter %d: %v; pool %+v sub %+v", iter, werr, p.Stats(), sub.Stats())
		}
		var pe *crew.PanicError
		for e := err; e != nil; {
			if q, ok := e.(*crew.PanicError); ok {
				pe = q
				break
			}
			u, ok := e.(interface{ Unwrap() error })
			if !ok {
				break
			}
			e = u.Unwrap()
		}
		if pe != nil {
			t.Logf("panic stack:\n%s", pe.Stack)
		}
		if err != nil || got != 81 {
			t.Fatalf("iter %d: got %d, %v; want 81", iter, got, err)
		}
		awaitReturn(t, "p.Wait", goRun(p.Wait))
		ps0, ss := p.Stats(), sub.Stats()
		idleIdentity(t, "pool", ps0)
		idleIdentity(t, "sub", ss)
		hp.check(t, "pool", ps0, true)
		hs.check(t, "sub", ss, false)
		p.StopAndWait()
	}
}
