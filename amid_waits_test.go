package crew_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// lifeHookCounts counts each hook of a pool.
type lifeHookCounts struct {
	queued, started, finished, rejected, discarded, panicked atomic.Int64
}

func (h *lifeHookCounts) hooks() crew.Hooks {
	return crew.Hooks{
		Queued:  func(crew.TaskInfo) { h.queued.Add(1) },
		Started: func(crew.TaskInfo) { h.started.Add(1) },
		Finished: func(i crew.TaskInfo) {
			h.finished.Add(1)
			if i.Panicked {
				h.panicked.Add(1)
			}
		},
		Rejected:  func(error) { h.rejected.Add(1) },
		Discarded: func(crew.TaskInfo) { h.discarded.Add(1) },
	}
}

func (h *lifeHookCounts) String() string {
	return fmt.Sprintf("queued %d started %d finished %d rejected %d discarded %d panicked %d",
		h.queued.Load(), h.started.Load(), h.finished.Load(), h.rejected.Load(), h.discarded.Load(), h.panicked.Load())
}

// checkHooksMatchStats checks an idle pool's hook counts against its Stats (no Keyed on it).
func checkHooksMatchStats(t *testing.T, what string, h *lifeHookCounts, s crew.Stats) {
	t.Helper()
	idleIdentity(t, what, s)
	if h.started.Load() != h.finished.Load() {
		t.Errorf("%s: Started %d != Finished %d (%v; stats %+v)", what, h.started.Load(), h.finished.Load(), h, s)
	}
	if uint64(h.started.Load()) != s.Completed+s.Panicked {
		t.Errorf("%s: Started %d != Completed+Panicked %d (%v; stats %+v)", what, h.started.Load(), s.Completed+s.Panicked, h, s)
	}
	if uint64(h.queued.Load()) != s.Accepted+uint64(h.rejected.Load()) {
		t.Errorf("%s: Queued %d != Accepted %d + Rejected hooks %d (%v; stats %+v)", what, h.queued.Load(), s.Accepted, h.rejected.Load(), h, s)
	}
}

// Nested fork/join through every kind of helping wait, on New(1) with a queue of one, with
// a sub-pool with a priority whose functions make groups on the parent.
func TestAmidNestedEveryWaitOnSubPoolWithPriority(t *testing.T) {
	t.Parallel()
	p := crew.New(1, crew.WithQueueSize(1))
	defer p.StopAndWait()
	hi := p.Sub(1, crew.WithPriority(2), crew.WithQueueSize(1))
	lo := p.Sub(1, crew.WithPriority(-1))
	var leaves atomic.Int64
	var fork func(ctx context.Context, pool *crew.Pool, d int) error
	fork = func(ctx context.Context, pool *crew.Pool, d int) error {
		if d == 0 {
			leaves.Add(1)
			return nil
		}
		switch d % 5 {
		case 0:
			g, _ := pool.Group(ctx)
			for range 2 {
				g.Go(func(ctx context.Context) error { return fork(ctx, pool, d-1) })
			}
			return g.Wait()
		case 1:
			r, _ := crew.NewResults[int](ctx, pool)
			for i := range 2 {
				r.Go(func(ctx context.Context) (int, error) { return i, fork(ctx, pool, d-1) })
			}
			v, err := r.Wait()
			if err == nil && (len(v) != 2 || v[1] != 1) {
				return fmt.Errorf("Results = %v", v)
			}
			return err
		case 2:
			_, err := crew.Map(ctx, pool, []int{1, 2}, func(ctx context.Context, _ int) (int, error) {
				return 0, fork(ctx, pool, d-1)
			})
			return err
		case 3:
			fs := []*crew.Future[int]{
				crew.GoContext(ctx, pool, func(ctx context.Context) (int, error) { return 0, fork(ctx, pool, d-1) }),
				crew.GoContext(ctx, pool, func(ctx context.Context) (int, error) { return 0, fork(ctx, pool, d-1) }),
			}
			for _, f := range fs {
				if _, err := f.Wait(); err != nil {
					return err
				}
			}
			return nil
		default:
			for _, err := range crew.MapSeq(ctx, pool, countTo(2), func(ctx context.Context, _ int) (int, error) {
				return 0, fork(ctx, pool, d-1)
			}) {
				if err != nil {
					return err
				}
			}
			return nil
		}
	}
	const depth = 6
	want := int64(1 << depth)
	type start struct {
		name        string
		top, nested *crew.Pool
	}
	starts := []start{
		{"lo->p", lo, p},
		{"hi->p", hi, p},
		{"hi->hi", hi, hi},
		{"lo->lo", lo, lo},
		{"p->p", p, p},
	}
	for _, s := range starts {
		t.Run(s.name, func(t *testing.T) {
			leaves.Store(0)
			g, _ := s.top.Group(context.Background())
			g.Go(func(ctx context.Context) error { return fork(ctx, s.nested, depth) })
			var err error
			done := goRun(func() { err = g.Wait() })
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("nested fork/join %s hung: %d of %d leaves; stats p %+v hi %+v lo %+v", s.name, leaves.Load(), want,
					p.Stats(), hi.Stats(), lo.Stats())
			}
			if err != nil || leaves.Load() != want {
				t.Fatalf("%s: err %v, %d of %d leaves", s.name, err, leaves.Load(), want)
			}
		})
	}
	for _, q := range []*crew.Pool{hi, lo, p} {
		q.Wait()
		idleIdentity(t, "pool", q.Stats())
	}
}

// Nested fork/join while the pool is paused and resumed and resized: completes, the limit
// holds.
func TestAmidNestedUnderPauseAndResize(t *testing.T) {
	t.Parallel()
	var h lifeHookCounts
	p := crew.New(2, crew.WithQueueSize(1), crew.WithHooks(h.hooks()))
	sub := p.Sub(2, crew.WithQueueSize(1))
	var hw highWater
	var leaves atomic.Int64
	var fork func(ctx context.Context, pool *crew.Pool, d int) error
	fork = func(ctx context.Context, pool *crew.Pool, d int) error {
		hw.enter()
		defer hw.exit()
		if d == 0 {
			leaves.Add(1)
			return nil
		}
		g, _ := pool.Group(ctx)
		for range 3 {
			g.Go(func(ctx context.Context) error {
				hw.exit()
				defer hw.enter()
				return fork(ctx, pool, d-1)
			})
		}
		return g.Wait()
	}
	stop := make(chan struct{})
	var storms sync.WaitGroup
	pauseStorm(&storms, stop, 100*time.Microsecond, p)
	pauseStorm(&storms, stop, 70*time.Microsecond, sub)
	repeatUntil(&storms, stop, func() {
		p.Resize(1)
		time.Sleep(50 * time.Microsecond)
		p.Resize(2)
		time.Sleep(50 * time.Microsecond)
	})
	const depth = 4
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool := []*crew.Pool{p, sub}[i%2]
			f := crew.GoContext(context.Background(), pool, func(ctx context.Context) (int, error) {
				return 0, fork(ctx, pool, depth)
			})
			select {
			case <-f.Done():
			case <-time.After(20 * time.Second):
				errs <- fmt.Errorf("tree %d hung; stats %+v sub %+v", i, p.Stats(), sub.Stats())
				return
			}
			if _, err := f.Wait(); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(stop)
	storms.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	p.Resume()
	p.StopAndWait()
	if hw.high.Load() > 2 {
		t.Errorf("%d functions ran at once on a pool of at most 2", hw.high.Load())
	}
	idleIdentity(t, "sub", sub.Stats())
	idleIdentity(t, "p", p.Stats())
	// p's hooks see p's own functions only: 3 trees of 1+3+9+27+81
	if h.queued.Load() != 363 || h.started.Load() != 363 || h.finished.Load() != 363 {
		t.Errorf("p's hooks: %v, want 363 of each", &h)
	}
}

// Hooks and Stats across the task's life: canceled futures, skipped functions, Goexit,
// panic(nil), helped functions, Shutdown, on a pool and a sub-pool with hooks of its own.
func TestAmidHooksSeeEveryLife(t *testing.T) {
	t.Parallel()
	for _, queue := range []int{0, 1} {
		t.Run(fmt.Sprint("queue", queue), func(t *testing.T) {
			var hp, hs lifeHookCounts
			opts := []crew.Option{crew.WithHooks(hp.hooks()), crew.WithPanicHandler(func(any, []byte) {})}
			if queue > 0 {
				opts = append(opts, crew.WithQueueSize(queue))
			}
			p := crew.New(1, opts...)
			sub := p.Sub(1, crew.WithHooks(hs.hooks()))
			for _, pool := range []*crew.Pool{p, sub} {
				// A task holds the worker while futures queue and get canceled.
				gate := make(chan struct{})
				holder := crew.Go(pool, func() (int, error) { <-gate; return 0, nil })
				var fs []*crew.Future[int]
				ctx, cancel := context.WithCancel(context.Background())
				n := 4
				if queue > 0 {
					n = 2
				}
				for i := range n {
					c := context.Background()
					if i%2 == 1 {
						c = ctx
					}
					done := goRun(func() {
						fs = append(fs, crew.GoContext(c, pool, func(context.Context) (int, error) { return i, nil }))
					})
					if queue == 0 {
						<-done
					} else {
						// the queue is full: the submit blocks; cancel ends it
						select {
						case <-done:
						case <-time.After(20 * time.Millisecond):
						}
						cancel()
						<-done
					}
				}
				cancel()
				if len(fs) > 0 {
					fs[0].Cancel()
				}
				close(gate)
				holder.Wait()
				for _, f := range fs {
					f.Wait()
				}
				// Goexit and panic(nil) in every kind.
				crew.Go(pool, func() (int, error) { runtime.Goexit(); return 0, nil }).Wait()
				crew.Go(pool, func() (int, error) { panic(nil) }).Wait()
				pool.Submit(func() { runtime.Goexit() })
				pool.Submit(func() { panic(nil) })
				g, _ := pool.Group(context.Background())
				g.Go(func(context.Context) error { runtime.Goexit(); return nil })
				g.Go(func(context.Context) error { panic(nil) })
				g.Wait()
				// helped: a function whose group runs its children
				f := crew.GoContext(context.Background(), pool, func(ctx context.Context) (int, error) {
					g, _ := pool.Group(ctx)
					for range 3 {
						g.Go(func(context.Context) error { return nil })
					}
					g.Go(func(context.Context) error { panic(nil) })
					g.Go(func(context.Context) error { runtime.Goexit(); return nil })
					return 0, g.Wait()
				})
				f.Wait()
				pool.Wait()
			}
			p.Wait()
			checkHooksMatchStats(t, "sub", &hs, sub.Stats())
			p.StopAndWait()
			s := p.Stats()
			idleIdentity(t, "p", s)
			// p's hooks do not see sub's tasks; its own must match
			if hp.started.Load() != hp.finished.Load() {
				t.Errorf("p: %v", &hp)
			}
		})
	}
}
