package crew_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
)

// waitKinds are the waits that help, each given a pool, the context of a running function,
// and a function for each of n children; they return the wait's error.
var lifeWaitKinds = []struct {
	name string
	run  func(ctx context.Context, p *crew.Pool, n int, child func(ctx context.Context, i int) error) error
}{
	{"Group", func(ctx context.Context, p *crew.Pool, n int, child func(context.Context, int) error) error {
		g, _ := p.Group(ctx)
		for i := range n {
			g.Go(func(ctx context.Context) error { return child(ctx, i) })
		}
		return g.Wait()
	}},
	{"GroupAll", func(ctx context.Context, p *crew.Pool, n int, child func(context.Context, int) error) error {
		g, _ := p.GroupAll(ctx)
		for i := range n {
			g.Go(func(ctx context.Context) error { return child(ctx, i) })
		}
		return g.Wait()
	}},
	{"Results", func(ctx context.Context, p *crew.Pool, n int, child func(context.Context, int) error) error {
		r, _ := crew.NewResults[int](ctx, p)
		for i := range n {
			r.Go(func(ctx context.Context) (int, error) { return i, child(ctx, i) })
		}
		_, err := r.Wait()
		return err
	}},
	{"Map", func(ctx context.Context, p *crew.Pool, n int, child func(context.Context, int) error) error {
		_, err := crew.Map(ctx, p, make([]int, n), func(ctx context.Context, _ int) (int, error) {
			return 0, nil
		})
		if err != nil {
			return err
		}
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		_, err = crew.Map(ctx, p, idx, func(ctx context.Context, i int) (int, error) { return i, child(ctx, i) })
		return err
	}},
	{"ForEach", func(ctx context.Context, p *crew.Pool, n int, child func(context.Context, int) error) error {
		return crew.ForEach(ctx, p, countTo(n), child)
	}},
	{"MapSeq", func(ctx context.Context, p *crew.Pool, n int, child func(context.Context, int) error) error {
		for _, err := range crew.MapSeq(ctx, p, countTo(n), func(ctx context.Context, i int) (int, error) { return i, child(ctx, i) }) {
			if err != nil {
				return err
			}
		}
		return nil
	}},
	{"MapSeqUnordered", func(ctx context.Context, p *crew.Pool, n int, child func(context.Context, int) error) error {
		for _, err := range crew.MapSeqUnordered(ctx, p, countTo(n), func(ctx context.Context, i int) (int, error) { return i, child(ctx, i) }) {
			if err != nil {
				return err
			}
		}
		return nil
	}},
	{"Futures", func(ctx context.Context, p *crew.Pool, n int, child func(context.Context, int) error) error {
		var fs []*crew.Future[int]
		for i := range n {
			fs = append(fs, crew.GoContext(ctx, p, func(ctx context.Context) (int, error) { return i, child(ctx, i) }))
		}
		var first error
		for _, f := range fs {
			if _, err := f.Wait(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}},
}

// A child that calls runtime.Goexit or panics with nil while a waiting function runs it in
// its slot, on a pool of one (with a queue of one) and on a sub-pool: the outer future
// reports it, nothing hangs, the pool goes on serving, the hooks match, Stats add up.
func TestAmidGoexitAndPanicNilInLentSlot(t *testing.T) {
	t.Parallel()
	for _, wk := range lifeWaitKinds {
		for _, how := range []string{"goexit", "panicnil"} {
			for _, onSub := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/sub=%v", wk.name, how, onSub), func(t *testing.T) {
					var h, hs lifeHookCounts
					p := crew.New(1, crew.WithQueueSize(1), crew.WithHooks(h.hooks()))
					sub := p.Sub(1, crew.WithHooks(hs.hooks()))
					outerPool := p
					if onSub {
						outerPool = sub
					}
					var ran atomic.Int32
					f := crew.GoContext(context.Background(), outerPool, func(ctx context.Context) (int, error) {
						err := wk.run(ctx, p, 4, func(ctx context.Context, i int) error {
							ran.Add(1)
							if i == 2 {
								if how == "goexit" {
									runtime.Goexit()
								}
								panic(nil)
							}
							return nil
						})
						return 7, err
					})
					var err error
					awaitReturn(t, "the outer Wait", goRun(func() { _, err = f.Wait() }))
					if err == nil {
						t.Fatalf("outer Wait = nil, want the child's %s reported", how)
					}
					if how == "panicnil" {
						var pe *crew.PanicError
						if !errors.As(err, &pe) {
							t.Errorf("outer Wait = %v, want a *PanicError", err)
						}
					} else if !strings.Contains(err.Error(), "Goexit") {
						t.Errorf("outer Wait = %v, want the Goexit named", err)
					}
					// the pool still serves
					var v int
					awaitReturn(t, "a later Go", goRun(func() {
						v, err = crew.GoContext(context.Background(), outerPool, func(context.Context) (int, error) { return 5, nil }).Wait()
					}))
					if v != 5 || err != nil {
						t.Fatalf("a later Go = %v, %v", v, err)
					}
					awaitReturn(t, "p.Wait", goRun(p.Wait))
					idleIdentity(t, "sub", sub.Stats())
					s := p.Stats()
					idleIdentity(t, "p", s)
					if h.started.Load() != h.finished.Load() || hs.started.Load() != hs.finished.Load() {
						t.Errorf("hooks do not match: p %v; sub %v", &h, &hs)
					}
					if !onSub {
						if uint64(h.started.Load()) != s.Completed+s.Panicked {
							t.Errorf("p: Started hooks %d != Completed+Panicked %d; %v; %+v", h.started.Load(), s.Completed+s.Panicked, &h, s)
						}
						if uint64(h.queued.Load()) != s.Accepted+uint64(h.rejected.Load()) {
							t.Errorf("p: Queued hooks %d != Accepted %d + Rejected %d; %+v", h.queued.Load(), s.Accepted, h.rejected.Load(), s)
						}
					}
					awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
				})
			}
		}
	}
}

// The parent's hooks see the functions a sub-pool's function runs in its slot for a group on
// the parent; every wait kind, on New(1) and a queue of one.
func TestAmidParentHooksSeeHelpedFunctions(t *testing.T) {
	t.Parallel()
	for _, wk := range lifeWaitKinds {
		t.Run(wk.name, func(t *testing.T) {
			var h lifeHookCounts
			p := crew.New(1, crew.WithQueueSize(1), crew.WithHooks(h.hooks()))
			defer p.StopAndWait()
			sub := p.Sub(1)
			var ran atomic.Int32
			f := crew.GoContext(context.Background(), sub, func(ctx context.Context) (int, error) {
				return 0, wk.run(ctx, p, 5, func(ctx context.Context, i int) error { ran.Add(1); return nil })
			})
			var err error
			awaitReturn(t, "Wait", goRun(func() { _, err = f.Wait() }))
			if err != nil {
				t.Fatal(err)
			}
			p.Wait()
			n := int64(ran.Load())
			if wk.name == "Map" {
				n += 5
			}
			if h.queued.Load() != n || h.started.Load() != n || h.finished.Load() != n {
				t.Errorf("p's hooks %v, want %d of each (the functions of p's own calls)", &h, n)
			}
			idleIdentity(t, "p", p.Stats())
			idleIdentity(t, "sub", sub.Stats())
		})
	}
}
