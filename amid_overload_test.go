package crew_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// ovlTask is one submitted task and what became of it.
type ovlTask struct {
	pool      int
	ran       atomic.Int32
	back      atomic.Int32 // handed back by StopNow
	discarded atomic.Int32 // given to the discard handler
	accepted  atomic.Int32 // its submit returned nil / true
	refused   atomic.Int32
}

// ovlHookCounts counts one pool's hook calls.
type ovlHookCounts struct {
	queued, started, finished, rejected, discarded atomic.Int64
}

func (h *ovlHookCounts) hooks() crew.Hooks {
	return crew.Hooks{
		Queued:    func(crew.TaskInfo) { h.queued.Add(1) },
		Started:   func(crew.TaskInfo) { h.started.Add(1) },
		Finished:  func(crew.TaskInfo) { h.finished.Add(1) },
		Rejected:  func(error) { h.rejected.Add(1) },
		Discarded: func(crew.TaskInfo) { h.discarded.Add(1) },
	}
}

// ovlPool is one pool of the tree with its own counts.
type ovlPool struct {
	p        *crew.Pool
	leaf     bool
	hooks    ovlHookCounts
	offered  atomic.Int64 // non-nil submits that reached admission (hooks see them)
	accepted atomic.Int64
	refused  atomic.Int64
	ran      atomic.Int64 // own tasks that ran (on a worker or the caller)
	limitMax int
}

type ovlTree struct {
	pools []*ovlPool
	mu    sync.Mutex
	tasks []*ovlTask
}

// ovlMarks records the goroutines that call tasks outside the pool (the discard handler, and
// the test calling what StopNow handed back), so that a task knows on which it runs.
type ovlMarks struct{ m sync.Map }

func (o *ovlMarks) enter() { o.m.Store(ovlGoid(), true) }
func (o *ovlMarks) exit()  { o.m.Delete(ovlGoid()) }
func (o *ovlMarks) on() bool {
	_, ok := o.m.Load(ovlGoid())
	return ok
}

func ovlGoid() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	b := bytes.TrimPrefix(buf[:n], []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

func ovlChaosRound(t *testing.T, seed uint64, stopNow bool) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e37))
	tr := &ovlTree{}
	// Discarded funcs are "run" by the handler with the marker on, so they count themselves
	// in discarded instead of ran: the handler runs on the submitter with no lock held.
	var discardMark, backMark ovlMarks
	discardHandler := func(v any) {
		f := v.(func())
		discardMark.enter()
		f()
		discardMark.exit()
	}

	rootHooks := &ovlPool{limitMax: 4}
	rootOpts := []crew.Option{crew.WithQueueSize(4), crew.WithHooks(rootHooks.hooks.hooks()), crew.WithLatencyHistograms(),
		crew.WithDiscardHandler(discardHandler), crew.WithIdleTimeout(time.Millisecond)}
	switch rng.IntN(4) {
	case 0:
		rootOpts = append(rootOpts, crew.WithOverflow(crew.DiscardOldest))
	case 1:
		rootOpts = append(rootOpts, crew.WithOverflow(crew.CallerRuns), crew.WithMaxBlocked(1))
	case 2:
		rootOpts = append(rootOpts, crew.WithNonBlocking())
	case 3:
		rootOpts = append(rootOpts, crew.WithMaxWait(time.Millisecond))
	}
	root := crew.New(3, rootOpts...)
	rootHooks.p = root
	tr.pools = append(tr.pools, rootHooks)

	mk := func(parent *crew.Pool, n int, opts ...crew.Option) *ovlPool {
		ap := &ovlPool{leaf: true, limitMax: 6}
		opts = append(opts, crew.WithHooks(ap.hooks.hooks()), crew.WithDiscardHandler(discardHandler))
		ap.p = parent.Sub(n, opts...)
		tr.pools = append(tr.pools, ap)
		return ap
	}
	a := mk(root, 2, crew.WithPriority(1), crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest))
	a.leaf = false
	_ = mk(root, 5, crew.WithQueueSize(3), crew.WithOverflow(crew.CallerRuns))
	_ = mk(root, 2, crew.WithPriority(-1))
	_ = mk(a.p, 1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest), crew.WithPriority(2))
	_ = mk(a.p, 3, crew.WithQueueSize(2), crew.WithMaxWait(time.Millisecond))
	rootHooks.leaf = false

	work := func() {
		if rng2 := rand.IntN(4); rng2 == 0 {
			time.Sleep(50 * time.Microsecond)
		}
	}
	// Wrap so that a discarded or handed-back call counts elsewhere.
	submit := func(i int, door int) {
		ap := tr.pools[i]
		at := &ovlTask{pool: i}
		tr.mu.Lock()
		tr.tasks = append(tr.tasks, at)
		tr.mu.Unlock()
		f := func() {
			switch {
			case discardMark.on():
				at.discarded.Add(1)
			case backMark.on():
				at.back.Add(1)
			default:
				at.ran.Add(1)
				ap.ran.Add(1)
				work()
			}
		}
		var err error
		switch door {
		case 0:
			err = ap.p.Submit(f)
		case 1:
			if !ap.p.TrySubmit(f) {
				err = crew.ErrQueueFull
			}
		case 2:
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Microsecond)
			err = ap.p.SubmitContext(ctx, f)
			cancel()
		case 3:
			err = ap.p.SubmitN(2, f)
			if errors.Is(err, crew.ErrTooHeavy) {
				// refused before admission: no hook sees it
				at.refused.Add(1)
				return
			}
		}
		ap.offered.Add(1)
		if err == nil {
			at.accepted.Add(1)
			ap.accepted.Add(1)
		} else {
			at.refused.Add(1)
			ap.refused.Add(1)
		}
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for s := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed+uint64(s), 7))
			for range 150 {
				submit(r.IntN(len(tr.pools)), r.IntN(4))
			}
		}()
	}
	var opWG sync.WaitGroup
	// Resizer: never below 2 so SubmitN(2) fits.
	repeatUntil(&opWG, stop, func() {
		i := rand.IntN(len(tr.pools))
		tr.pools[i].p.Resize(2 + rand.IntN(3))
		time.Sleep(100 * time.Microsecond)
	})
	repeatUntil(&opWG, stop, func() {
		i := rand.IntN(len(tr.pools))
		tr.pools[i].p.Pause()
		time.Sleep(100 * time.Microsecond)
		tr.pools[i].p.Resume()
		time.Sleep(100 * time.Microsecond) // a gap, or a pool below may never find the tree running
	})
	repeatUntil(&opWG, stop, func() {
		i := rand.IntN(len(tr.pools))
		tr.pools[i].p.SetRateLimit(20000, 2)
		time.Sleep(200 * time.Microsecond)
		tr.pools[i].p.SetRateLimit(math.Inf(1), 1)
	})
	// Stats watcher on every pool.
	repeatUntil(&opWG, stop, func() {
		for i, ap := range tr.pools {
			s := ap.p.Stats()
			if s.Completed+s.Panicked > s.Accepted {
				t.Errorf("pool %d: Completed+Panicked > Accepted: %+v", i, s)
			}
			if s.Running < 0 || s.Waiting < 0 || s.Idle < 0 {
				t.Errorf("pool %d: negative gauge: %+v", i, s)
			}
		}
		time.Sleep(50 * time.Microsecond)
	})
	wg.Wait()
	close(stop)
	opWG.Wait()
	for _, ap := range tr.pools {
		ap.p.SetRateLimit(math.Inf(1), 1)
		ap.p.Resume()
	}
	if stopNow {
		back := root.StopNow()
		backMark.enter()
		for _, f := range back {
			f()
		}
		backMark.exit()
	}
	done := goRun(root.StopAndWait)
	if err := within(done, "root.StopAndWait"); err != nil {
		for i, ap := range tr.pools {
			t.Logf("pool %d stats %+v", i, ap.p.Stats())
		}
		t.Fatalf("seed %d: %v", seed, err)
	}

	// Exactly once.
	var lost, twice, refusedRan int
	for _, at := range tr.tasks {
		n := at.ran.Load() + at.back.Load() + at.discarded.Load()
		switch {
		case at.accepted.Load() == 1 && n == 0:
			lost++
		case at.accepted.Load() == 1 && n > 1:
			twice++
		case at.refused.Load() == 1 && n != 0:
			refusedRan++
		}
	}
	if lost+twice+refusedRan > 0 {
		t.Errorf("seed %d stopNow %v: %d accepted tasks lost, %d accounted twice, %d refused ones ran", seed, stopNow, lost, twice, refusedRan)
	}
	for i, ap := range tr.pools {
		s := ap.p.Stats()
		idleIdentity(t, fmt.Sprintf("seed %d pool %d", seed, i), s)
		h := &ap.hooks
		var disc, backs int64
		for _, at := range tr.tasks {
			if at.pool == i {
				disc += int64(at.discarded.Load())
				backs += int64(at.back.Load())
			}
		}
		if h.queued.Load() != ap.offered.Load() || h.rejected.Load() != ap.refused.Load() ||
			h.started.Load() != ap.ran.Load() || h.finished.Load() != ap.ran.Load() || h.discarded.Load() != disc {
			t.Errorf("seed %d pool %d: hooks queued %d rejected %d started %d finished %d discarded %d; want offered %d refused %d ran %d discarded %d",
				seed, i, h.queued.Load(), h.rejected.Load(), h.started.Load(), h.finished.Load(), h.discarded.Load(),
				ap.offered.Load(), ap.refused.Load(), ap.ran.Load(), disc)
		}
		if ap.leaf {
			if s.Accepted != uint64(ap.accepted.Load()) || s.Discarded != uint64(disc) || s.Returned != uint64(backs) {
				t.Errorf("seed %d leaf pool %d: Stats %+v; want Accepted %d Discarded %d Returned %d", seed, i, s, ap.accepted.Load(), disc, backs)
			}
		}
	}
}

func TestAmidChaosTree(t *testing.T) {
	base := uint64(time.Now().UnixNano())
	for r := range 6 {
		seed := base + uint64(r)
		ovlChaosRound(t, seed, r%2 == 1)
		if t.Failed() {
			t.Logf("failing seed %d", seed)
			return
		}
	}
}
