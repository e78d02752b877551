package crew_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// Shutdown of the root whose ctx ends first: running functions of a sub-pool of a sub-pool
// see their context end with ErrStopped (even under WithTaskTimeout), queued functions with a
// context are skipped with ErrStopped, plain and keyed tasks still run.
func TestAmidShutdownPastDeadlineReachesSubPoolsOfSubPools(t *testing.T) {
	t.Parallel()
	var hr, hl lifeHookCounts
	root := crew.New(2, crew.WithTaskTimeout(time.Hour), crew.WithHooks(hr.hooks()))
	mid := root.Sub(2, crew.WithPriority(1))
	leaf := mid.Sub(1, crew.WithHooks(hl.hooks()))
	k := crew.NewKeyed[int](leaf)

	running := make(chan struct{}, 4)
	causes := make(chan error, 4)
	watch := func(ctx context.Context) error {
		running <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return context.Cause(ctx)
	}
	// one running on leaf, one on root: both slots of root are held
	fLeaf := crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) { return 0, watch(ctx) })
	gRoot, _ := root.Group(context.Background())
	gRoot.Go(watch)
	<-running
	<-running
	// queued: a group's function on leaf, a future on mid, a Map on root, plain and keyed tasks
	gLeaf, _ := leaf.GroupAll(context.Background())
	var ranQueuedFn atomic.Int32
	gLeaf.Go(func(context.Context) error { ranQueuedFn.Add(1); return nil })
	fMid := crew.GoContext(context.Background(), mid, func(context.Context) (int, error) { ranQueuedFn.Add(1); return 1, nil })
	mapDone := make(chan error, 1)
	go func() {
		_, err := crew.Map(context.Background(), root, []int{1, 2, 3}, func(context.Context, int) (int, error) {
			ranQueuedFn.Add(1)
			return 0, nil
		})
		mapDone <- err
	}()
	var plain, keyed atomic.Int32
	for i := range 3 {
		must(t, leaf.Submit(func() { plain.Add(1) }))
		must(t, k.Submit(i%2, func() { keyed.Add(1) }))
		must(t, root.Submit(func() { plain.Add(1) }))
	}
	waitFor(t, "the Map's calls to queue", func() bool { return root.Stats().Waiting >= 4 })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := root.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
	for range 2 {
		select {
		case c := <-causes:
			if !errors.Is(c, crew.ErrStopped) {
				t.Errorf("a running function's cause = %v, want ErrStopped", c)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a running function's context did not end after Shutdown gave up")
		}
	}
	if _, err := fLeaf.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("leaf future = %v", err)
	}
	if err := gRoot.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("root group = %v", err)
	}
	if err := gLeaf.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("leaf GroupAll Wait = %v, want its queued function skipped with ErrStopped", err)
	}
	if _, err := fMid.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("mid future = %v, want skipped with ErrStopped", err)
	}
	select {
	case err := <-mapDone:
		if !errors.Is(err, crew.ErrStopped) {
			t.Errorf("Map = %v, want ErrStopped", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Map did not return after Shutdown gave up")
	}
	root.StopAndWait()
	if n := ranQueuedFn.Load(); n != 0 {
		t.Errorf("%d queued functions with a context ran after Shutdown gave up", n)
	}
	if plain.Load() != 6 || keyed.Load() != 3 {
		t.Errorf("plain %d of 6, keyed %d of 3 ran", plain.Load(), keyed.Load())
	}
	for _, pool := range []*crew.Pool{leaf, mid, root} {
		idleIdentity(t, "pool", pool.Stats())
	}
	idleIdentity(t, "keyed", k.Stats())
	if hl.started.Load() != hl.finished.Load() || hr.started.Load() != hr.finished.Load() {
		t.Errorf("hooks: leaf %v; root %v", &hl, &hr)
	}
	// leaf: 1 future + 1 group fn + 3 plain + 3 keyed accepted; 1 fn skipped
	if s := leaf.Stats(); s.Skipped != 1 {
		t.Errorf("leaf Stats %+v, want Skipped 1", s)
	}
	if hl.queued.Load() != 8 || hl.started.Load() != 7 {
		t.Errorf("leaf hooks %v, want 8 queued, 7 started (the skipped function unseen)", &hl)
	}
}

// Shutdown of a sub-pool whose ctx ends first cancels its own functions' contexts and
// skips its own queued ones only: the parent's and the sibling's are untouched.
func TestAmidSubPoolShutdownLeavesParentAndSibling(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	a := p.Sub(2)
	b := p.Sub(2)
	started := make(chan string, 8)
	release := make(chan struct{})
	mk := func(name string) func(ctx context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			started <- name
			select {
			case <-ctx.Done():
				return "", context.Cause(ctx)
			case <-release:
				return name, nil
			}
		}
	}
	fp := crew.GoContext(context.Background(), p, mk("p"))
	fa := crew.GoContext(context.Background(), a, mk("a"))
	fb := crew.GoContext(context.Background(), b, mk("b"))
	for range 3 {
		<-started
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := a.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a.Shutdown = %v", err)
	}
	if _, err := fa.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("a's function: %v, want ErrStopped", err)
	}
	// p and b go on: new functions with a context run
	fp2 := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) { return 2, ctx.Err() })
	fb2 := crew.GoContext(context.Background(), b, func(ctx context.Context) (int, error) { return 3, ctx.Err() })
	if v, err := fp2.Wait(); v != 2 || err != nil {
		t.Errorf("p after a's Shutdown: %v %v", v, err)
	}
	if v, err := fb2.Wait(); v != 3 || err != nil {
		t.Errorf("b after a's Shutdown: %v %v", v, err)
	}
	select {
	case <-fp.Done():
		t.Errorf("p running function ended after a Shutdown")
	case <-fb.Done():
		t.Errorf("b's running function ended after a's Shutdown")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if v, err := fp.Wait(); v != "p" || err != nil {
		t.Errorf("p: %v %v", v, err)
	}
	if v, err := fb.Wait(); v != "b" || err != nil {
		t.Errorf("b: %v %v", v, err)
	}
	p.Wait()
	for _, q := range []*crew.Pool{a, b, p} {
		idleIdentity(t, "pool", q.Stats())
	}
}

// Shutdown past its deadline while a function waits in a helping Wait whose children watch
// their context: every wait returns, the queued children are skipped.
func TestAmidShutdownPastDeadlineEndsHelpingWaits(t *testing.T) {
	t.Parallel()
	for _, q := range []int{0, 1} {
		t.Run(fmt.Sprint("queue", q), func(t *testing.T) {
			opts := []crew.Option{}
			if q > 0 {
				opts = append(opts, crew.WithQueueSize(q))
			}
			p := crew.New(1, opts...)
			sub := p.Sub(1)
			var ran, inside atomic.Int32
			insideCh := make(chan struct{}, 1)
			outer := crew.GoContext(context.Background(), sub, func(ctx context.Context) (int, error) {
				g, _ := p.Group(ctx)
				for range 5 {
					g.Go(func(ctx context.Context) error {
						ran.Add(1)
						if inside.Add(1) == 1 {
							insideCh <- struct{}{}
						}
						<-ctx.Done()
						return context.Cause(ctx)
					})
				}
				return 0, g.Wait()
			})
			plainRan := make(chan struct{})
			must(t, p.Submit(func() { close(plainRan) }))
			<-insideCh
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Shutdown = %v", err)
			}
			var err error
			awaitReturn(t, "the outer function's Wait", goRun(func() { _, err = outer.Wait() }))
			if !errors.Is(err, crew.ErrStopped) {
				t.Errorf("outer = %v, want ErrStopped", err)
			}
			awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
			awaitReturn(t, "the plain task", plainRan)
			if ran.Load() != 1 {
				t.Errorf("%d children ran, want 1 (the others queued when the Shutdown gave up)", ran.Load())
			}
			idleIdentity(t, "sub", sub.Stats())
			idleIdentity(t, "p", p.Stats())
		})
	}
}

// Shutdown of a paused pool whose ctx ends first: functions with a context queued are
// skipped, plain tasks run, Stats add up.
func TestAmidShutdownPausedPastDeadline(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	sub := p.Sub(1, crew.WithPriority(1))
	gate := make(chan struct{})
	// keep Shutdown from draining: one plain task that blocks. Wait for it to have started
	// (Running counts it from when a worker is given it, and a Pause may put it back).
	blockerIn := make(chan struct{})
	must(t, p.Submit(func() { close(blockerIn); <-gate }))
	<-blockerIn
	p.Pause()
	var plain, fns, phase atomic.Int32
	var fs []*crew.Future[int]
	for i := range 6 {
		pool := []*crew.Pool{p, sub}[i%2]
		must(t, pool.Submit(func() { plain.Add(1) }))
		fs = append(fs, crew.GoContext(context.Background(), pool, func(context.Context) (int, error) { fns.Add(1); return int(phase.Load()), nil }))
	}
	fs[0].Cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err := p.Shutdown(ctx)
	took := time.Since(t0)
	phase.Store(1)
	close(gate)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v", err)
	}
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	if plain.Load() != 6 {
		t.Errorf("%d plain tasks of 6 ran", plain.Load())
	}
	for i, f := range fs {
		v, ferr := f.Wait()
		if ferr == nil && err != nil {
			t.Logf("future %d ran in phase %d (Shutdown %v after %v)", i, v, err, took)
		}
	}
	if err != nil && fns.Load() != 0 {
		t.Errorf("%d functions with a context ran after the Shutdown gave up on a paused pool", fns.Load())
	}
	idleIdentity(t, "sub", sub.Stats())
	idleIdentity(t, "p", p.Stats())
	if s := p.Stats(); s.Paused {
		t.Errorf("p still paused after Shutdown: %+v", s)
	}
}

// Future.Cancel on futures of a sub-pool whose worker waits in the paused parent's queue,
// then StopNow of the sub-pool or the parent: every future ends once, Stats add up.
func TestAmidCancelThenStopNowAcrossSubPools(t *testing.T) {
	t.Parallel()
	for _, which := range []string{"sub", "parent", "subsub"} {
		t.Run(which, func(t *testing.T) {
			p := crew.New(1)
			sub := p.Sub(2, crew.WithPriority(1))
			subsub := sub.Sub(1)
			gate := make(chan struct{})
			blockerIn := make(chan struct{})
			must(t, p.Submit(func() { close(blockerIn); <-gate }))
			<-blockerIn
			p.Pause()
			var fs []*crew.Future[int]
			var ran atomic.Int32
			for i := range 12 {
				pool := []*crew.Pool{sub, subsub, p}[i%3]
				fs = append(fs, crew.GoContext(context.Background(), pool, func(context.Context) (int, error) { ran.Add(1); return i, nil }))
				must(t, pool.Submit(func() { ran.Add(1) }))
			}
			canceled := 0
			for i, f := range fs {
				if i%2 == 0 {
					if !f.Cancel() {
						t.Errorf("Cancel of queued future %d = false", i)
					}
					canceled++
				}
			}
			var out []func()
			switch which {
			case "sub":
				out = sub.StopNow()
			case "parent":
				out = p.StopNow()
			case "subsub":
				out = subsub.StopNow()
			}
			close(gate)
			p.Resume()
			for i, f := range fs {
				var err error
				awaitReturn(t, "a future's Wait", goRun(func() { _, err = f.Wait() }))
				if i%2 == 0 && !errors.Is(err, context.Canceled) {
					t.Errorf("canceled future %d: %v", i, err)
				}
			}
			p.Wait()
			total := 0
			for _, q := range []*crew.Pool{subsub, sub, p} {
				s := q.Stats()
				idleIdentity(t, which+": pool", s)
				total += int(s.Returned)
			}
			_ = total
			t.Logf("%s: StopNow handed back %d, %d ran", which, len(out), ran.Load())
			p.StopAndWait()
			if int(ran.Load())+len(out) > 24-canceled {
				t.Errorf("ran %d + handed back %d > %d", ran.Load(), len(out), 24-canceled)
			}
		})
	}
}

var _ = sync.Mutex{}
