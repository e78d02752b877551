package crew_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/racetest"
)

// The storms below run every call of the API against every other across a tree of pools:
// a parent with a small limit, sub-pools at several priority levels with bounded queues and
// each overflow policy, a sub-pool of a sub-pool with a task timeout and a rate limit, and a
// Keyed on a sub-pool. Each storm is shaped by a seed, which the subtest's name carries.

// stormGoid returns the id of the calling goroutine, so that a task can tell whether
// CallerRuns ran it on its submitter, where it holds no slot of the pool.
func stormGoid() uint64 {
	var b [64]byte
	n := runtime.Stack(b[:], false)
	s := bytes.TrimPrefix(b[:n], []byte("goroutine "))
	if i := bytes.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	id, _ := strconv.ParseUint(string(s), 10, 64)
	return id
}

// stormHooks counts the calls of one pool's hooks.
type stormHooks struct {
	queued, started, finished, finPanicked, rejected, discarded atomic.Int64
	onStart                                                     func() // set before the storm starts, or nil
}

func (h *stormHooks) hooks() crew.Hooks {
	return crew.Hooks{
		Queued: func(crew.TaskInfo) { h.queued.Add(1) },
		Started: func(crew.TaskInfo) {
			h.started.Add(1)
			if h.onStart != nil {
				h.onStart()
			}
		},
		Finished: func(i crew.TaskInfo) {
			if i.Panicked {
				h.finPanicked.Add(1)
			}
			h.finished.Add(1)
		},
		Rejected:  func(error) { h.rejected.Add(1) },
		Discarded: func(crew.TaskInfo) { h.discarded.Add(1) },
	}
}

// stormPool is one pool of the tree, with a gauge of the tasks of it and of its sub-pools
// that run on a worker (counted from inside the tasks).
type stormPool struct {
	name    string
	p       *crew.Pool
	up      *stormPool
	gauge   limitGauge
	ceiling atomic.Int64 // the highest limit the pool ever had
	hooks   *stormHooks
	inline  bool // CallerRuns: a task may run on its submitter, outside every slot
	// stopping is set before a stop of the pool or of a pool above it is called, stopped
	// once it has returned.
	stopping, stopped atomic.Bool
}

// below reports whether x is y or under y.
func (x *stormPool) below(y *stormPool) bool {
	for ; x != nil; x = x.up {
		if x == y {
			return true
		}
	}
	return false
}

// stopTree marks the pools at and under top stopping, calls stop, and marks them stopped.
func (s *storm) stopTree(top *stormPool, stop func()) {
	for _, x := range s.pools {
		if x.below(top) {
			x.stopping.Store(true)
		}
	}
	stop()
	for _, x := range s.pools {
		if x.below(top) {
			x.stopped.Store(true)
		}
	}
}

// refusal checks a submit's outcome against the stops around it: a submit that began after
// a stop of its pool (or one above) returned must give ErrStopped (Pool.Stop: "when any Stop
// call returns, the pool and every sub-pool refuse tasks"); one that returned before any such
// stop began, on a pool that never refuses otherwise, must accept (Pool.Sub: stopping a
// sub-pool leaves the parent and its other sub-pools working).
func (s *storm) refusal(x *stormPool, call string, wasStopped bool, err error) {
	switch {
	case wasStopped && !errors.Is(err, crew.ErrStopped):
		s.errorf("%s to %s after its stop returned: %v, want ErrStopped", call, x.name, err)
	case err != nil && !x.stopping.Load() && x.name != "C" && x.name != "F":
		s.errorf("%s to %s, which no stop had reached: %v", call, x.name, err)
	}
}

// chain is x and its ancestors.
func (x *stormPool) chain() []*stormPool {
	var c []*stormPool
	for ; x != nil; x = x.up {
		c = append(c, x)
	}
	return c
}

func (x *stormPool) enter() {
	for y := x; y != nil; y = y.up {
		y.gauge.enter()
	}
}

func (x *stormPool) leave() {
	for y := x; y != nil; y = y.up {
		y.gauge.leave()
	}
}

// stormItem is one function given to the tree: how often it ran, and how often it came back
// to the test unrun (from StopNow or the discard handler).
type stormItem struct {
	what      string
	accepted  bool // its submit returned nil or true
	elsewhere bool // a function of a future, group or map: its fate is checked by its Wait
	runs      atomic.Int32
	handed    atomic.Int32
}

// storm is one run over one tree.
type storm struct {
	t      *testing.T
	seed   uint64
	root   *stormPool
	pools  []*stormPool
	byName map[string]*stormPool
	keyed  *crew.Keyed[int]
	keyedA *crew.Keyed[int] // on A, whose DiscardOldest drops keyed turns
	kpool  *stormPool

	handback atomic.Bool // set once the tree has exited: returned tasks then only report

	mu          sync.Mutex
	items       []*stormItem
	back        []func() // from StopNow and the discard handler
	discards    int
	returned    map[string]int
	panics      atomic.Int64
	failed      atomic.Bool
	futures     []stormFuture
	keySeq      map[int]int
	keyCheck    *keyChecker
	hookSubmits atomic.Int64 // TrySubmits the hooks of C may still make
	taskSubmits atomic.Int64 // TrySubmits the tasks may still make
	secondC     stormHooks   // C's second WithHooks, which must see what the first sees
	deadlines   atomic.Int64 // task-timeout contexts that failed to end
}

type stormFuture struct {
	it       *stormItem
	f        *crew.Future[int]
	id       int
	canceled bool
	cancel   context.CancelFunc
}

// dump describes the tree's state, for a failure's message.
func (s *storm) dump() string {
	var b bytes.Buffer
	for _, x := range s.pools {
		fmt.Fprintf(&b, "\n%s: %+v", x.name, x.p.Stats())
	}
	fmt.Fprintf(&b, "\nKeyed on D: %+v\nKeyed on A: %+v", s.keyed.Stats(), s.keyedA.Stats())
	return b.String()
}

func (s *storm) errorf(format string, args ...any) {
	s.failed.Store(true)
	s.t.Errorf("seed %d: "+format, append([]any{s.seed}, args...)...)
}

func (s *storm) item(what string) *stormItem {
	it := &stormItem{what: what, elsewhere: what[0] == 'G' || what[0] == 'g' || what[0] == 'M'}
	s.mu.Lock()
	s.items = append(s.items, it)
	s.mu.Unlock()
	return it
}

// plain is a plain task of x whose behaviour is kind: return, panic, panic(nil), Goexit.
func (s *storm) plain(x *stormPool, it *stormItem, kind int, submitter uint64) func() {
	return func() {
		if s.handback.Load() {
			it.handed.Add(1)
			return
		}
		it.runs.Add(1)
		if x.inline && kind == 3 {
			kind = 0 // Goexit on the submitter would end the storm's submitter
		}
		if !x.inline || stormGoid() != submitter {
			x.enter()
			defer x.leave()
		}
		switch kind {
		case 1:
			panic("storm")
		case 2:
			panic(nil)
		case 3:
			runtime.Goexit()
		case 4:
			x.p.Stats()
			s.root.p.Stats()
		case 5:
			if s.taskSubmits.Add(-1) >= 0 {
				child := s.item("TrySubmit from a task of " + x.name)
				child.accepted = x.p.TrySubmit(s.plain(x, child, 0, 0))
			}
		default:
			runtime.Gosched()
		}
	}
}

// newStorm builds the tree:
//
//	root (3, hooks)
//	├── A (2, level 1, queue 3, DiscardOldest, hooks)
//	│   └── AA (3, level -1, task timeout, rate limit, hooks)
//	├── B (2, level 0, queue 2, CallerRuns, hooks)
//	├── C (2, level 2, queue 2, Reject, hooks)
//	└── D (3, level -1, hooks) with a Keyed
func newStorm(t *testing.T, seed uint64) *storm {
	s := &storm{t: t, seed: seed, byName: map[string]*stormPool{}, returned: map[string]int{},
		keySeq: map[int]int{}, keyCheck: newKeyChecker()}
	add := func(name string, up *stormPool, limit int, h bool, inline bool, mk func(opts ...crew.Option) *crew.Pool, opts ...crew.Option) *stormPool {
		x := &stormPool{name: name, up: up, inline: inline}
		if h {
			x.hooks = new(stormHooks)
			opts = append(opts, crew.WithHooks(x.hooks.hooks()))
		}
		x.p = mk(opts...)
		x.gauge.limit.Store(int64(limit))
		x.ceiling.Store(int64(limit))
		s.pools = append(s.pools, x)
		s.byName[name] = x
		return x
	}
	s.root = add("root", nil, 3, true, false, func(o ...crew.Option) *crew.Pool { return crew.New(3, o...) },
		crew.WithPanicHandler(func(any, []byte) { s.panics.Add(1) }))
	sub := func(up *stormPool, n int) func(o ...crew.Option) *crew.Pool {
		return func(o ...crew.Option) *crew.Pool { return up.p.Sub(n, o...) }
	}
	a := add("A", s.root, 2, true, false, sub(s.root, 2), crew.WithPriority(1), crew.WithQueueSize(3),
		crew.WithOverflow(crew.DiscardOldest), crew.WithDiscardHandler(func(v any) {
			s.mu.Lock()
			s.discards++
			s.back = append(s.back, v.(func()))
			s.mu.Unlock()
		}))
	add("AA", a, 3, true, false, sub(a, 3), crew.WithPriority(-1), crew.WithTaskTimeout(2*time.Millisecond),
		crew.WithRateLimit(20000, 8))
	add("B", s.root, 2, true, true, sub(s.root, 2), crew.WithQueueSize(2), crew.WithOverflow(crew.CallerRuns))
	add("C", s.root, 2, true, false, sub(s.root, 2), crew.WithPriority(2), crew.WithQueueSize(2),
		crew.WithOverflow(crew.Reject), crew.WithHooks(s.secondC.hooks()))
	s.kpool = add("D", s.root, 3, true, false, sub(s.root, 3), crew.WithPriority(-1))
	s.keyed = crew.NewKeyed[int](s.kpool.p)
	add("F", s.root, 2, true, false, sub(s.root, 2), crew.WithPriority(1), crew.WithQueueSize(2),
		crew.WithMaxBlocked(2), crew.WithMaxWait(2*time.Millisecond))
	add("E", s.root, 3, true, false, sub(s.root, 3), crew.WithAdaptiveLimit(1), crew.WithRateLimit(50000, 16))
	s.keyedA = crew.NewKeyed[int](a.p, crew.WithQueueSize(4), crew.WithNonBlocking())
	// Hooks call into the tree: Stats of their pool, its parent and the Keyed, and a
	// TrySubmit into their own pool (a few times a storm).
	c := s.byName["C"]
	c.hooks.onStart = func() {
		if s.hookSubmits.Add(-1) >= 0 {
			it := s.item("TrySubmit from a hook of C")
			it.accepted = c.p.TrySubmit(s.plain(c, it, 0, 0))
		}
	}
	for _, name := range []string{"AA", "D"} {
		x := s.byName[name]
		x.hooks.onStart = func() {
			x.p.Stats()
			x.up.p.Stats()
			s.keyed.Stats()
		}
	}
	s.hookSubmits.Store(50)
	s.taskSubmits.Store(100)
	return s
}

// resize sets x's limit to n, keeping x's gauge limit at or above the one the pool
// promises: raised before a growing Resize, lowered once no more than n tasks run.
func (s *storm) resize(x *stormPool, n int) {
	arg := n
	if n == 0 {
		arg, n = crew.CPUs, runtime.GOMAXPROCS(0)
	}
	if int64(n) >= x.gauge.limit.Load() {
		for c := x.ceiling.Load(); int64(n) > c && !x.ceiling.CompareAndSwap(c, int64(n)); c = x.ceiling.Load() {
		}
		x.gauge.limit.Store(int64(n))
		x.p.Resize(arg)
		return
	}
	x.p.Resize(arg)
	deadline := time.Now().Add(10 * time.Second)
	for x.p.Stats().Running > n {
		if time.Now().After(deadline) {
			s.errorf("%s: Running stayed above %d for 10 s after Resize(%d): %+v", x.name, n, n, x.p.Stats())
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
	x.gauge.limit.Store(int64(n))
}

// watch reads every pool's Stats (and the Keyed's) in a loop until stop is closed, checking
// what each snapshot promises.
func (s *storm) watch(wg *sync.WaitGroup, stop <-chan struct{}) {
	prev := make([]crew.Stats, len(s.pools)+2)
	reported := make([]bool, len(s.pools)+2)
	repeatUntil(wg, stop, func() {
		for i := range len(s.pools) + 2 {
			var st crew.Stats
			name := "Keyed"
			switch {
			case i < len(s.pools):
				st, name = s.pools[i].p.Stats(), s.pools[i].name
			case i == len(s.pools):
				st = s.keyed.Stats()
			default:
				st, name = s.keyedA.Stats(), "Keyed on A"
			}
			var bad string
			ended := st.Completed + st.Panicked + st.Discarded + st.Returned + st.Skipped
			switch {
			case countersWentBack(st, prev[i]):
				bad = "a counter went backwards"
			case ended > st.Accepted:
				bad = "more tasks ended than were accepted"
			case st.Running < 0 || st.Waiting < 0 || st.Idle < 0:
				bad = "a negative gauge"
			case i < len(s.pools) && int64(st.Running) > s.pools[i].ceiling.Load():
				bad = "Running above every limit the pool had"
			case i < len(s.pools) && st.Accepted-ended != uint64(st.Running+st.Waiting):
				bad = "Running+Waiting is not the accepted tasks not ended"
			}
			if bad != "" && !reported[i] {
				reported[i] = true
				s.errorf("%s: %s: %+v after %+v", name, bad, st, prev[i])
			}
			prev[i] = st
		}
		runtime.Gosched()
	})
}

// ancestorOrSelf picks x or one of its ancestors.
func ancestorOrSelf(r *rand.Rand, x *stormPool) *stormPool {
	c := x.chain()
	return c[r.IntN(len(c))]
}

// fn is a function with a context given to x (by a group or a map) at nesting depth. It
// leaves its gauges while it nests: the functions it runs itself (waits that help, or
// Group.Go on a full queue) run in its slot.
func (s *storm) fn(r *rand.Rand, x *stormPool, depth int) (func(ctx context.Context) error, *stormItem) {
	it := s.item(fmt.Sprintf("group fn of %s at depth %d", x.name, depth))
	mode := r.IntN(10)
	var nestOn *stormPool
	var nestSeed uint64
	if mode >= 7 && depth < 2 {
		nestOn = ancestorOrSelf(r, x)
		if nestOn.name == "A" {
			// Not on A: a Group.Go that helps into A's full DiscardOldest queue can block
			// for ever (TestAdvStormHelpingGoIntoDiscardOldestBehindACanceledHead).
			nestOn = s.root
		}
		nestSeed = r.Uint64()
	}
	return func(ctx context.Context) error {
		it.runs.Add(1)
		x.enter()
		in := true
		defer func() {
			if in {
				x.leave()
			}
		}()
		switch {
		case nestOn != nil:
			x.leave()
			in = false
			err := s.nest(ctx, rand.New(rand.NewPCG(nestSeed, 1)), nestOn, depth+1)
			x.enter()
			in = true
			return err
		case mode == 0:
			return errors.New("planned error")
		case mode == 1:
			panic("planned panic")
		case mode == 2 && x.name == "AA":
			// WithTaskTimeout: the context ends 2 ms after the start.
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				s.deadlines.Add(1)
			}
			return nil
		}
		runtime.Gosched()
		return nil
	}, it
}

// nest makes a group or a Map on x from ctx (a context crew gave a function running on x or
// on a sub-pool of x) and waits for it.
func (s *storm) nest(ctx context.Context, r *rand.Rand, x *stormPool, depth int) error {
	n := 1 + r.IntN(4)
	if r.IntN(3) == 0 {
		in := make([]int, n)
		its := make([]*stormItem, n)
		for i := range in {
			in[i] = i
			its[i] = s.item(fmt.Sprintf("Map fn of %s at depth %d", x.name, depth))
		}
		out, err := crew.Map(ctx, x.p, in, func(_ context.Context, v int) (int, error) {
			its[v].runs.Add(1)
			x.enter()
			defer x.leave()
			return v * 3, nil
		})
		if err == nil {
			for i, v := range out {
				if v != i*3 || its[i].runs.Load() != 1 {
					s.errorf("nested Map on %s returned nil but result %d is %d after %d runs", x.name, i, v, its[i].runs.Load())
				}
			}
		}
		return err
	}
	g, gctx := x.p.Group(ctx)
	_ = gctx
	its := make([]*stormItem, n)
	for i := range n {
		f, it := s.fn(r, x, depth)
		its[i] = it
		g.Go(f)
	}
	err := g.Wait()
	if err == nil {
		for _, it := range its {
			if it.runs.Load() != 1 {
				s.errorf("nested group on %s: Wait returned nil but a function ran %d times", x.name, it.runs.Load())
			}
		}
	}
	return err
}

// op is one random call of a submitter.
func (s *storm) op(r *rand.Rand, sub int, me uint64, ctxDone context.Context) {
	names := []string{"root", "A", "AA", "B", "C", "E", "F"}
	x := s.byName[names[r.IntN(len(names))]]
	switch d := r.IntN(20); {
	case d < 6: // Submit
		kind := r.IntN(6)
		it := s.item(fmt.Sprintf("Submit to %s of kind %d", x.name, kind))
		wasStopped := x.stopped.Load()
		err := x.p.Submit(s.plain(x, it, kind, me))
		it.accepted = err == nil
		s.refusal(x, "Submit", wasStopped, err)
		if err != nil && it.runs.Load() > 0 {
			s.errorf("Submit to %s returned %v, but the task ran (kind %d)", x.name, err, kind)
		}
	case d < 8: // TrySubmit
		it := s.item("TrySubmit to " + x.name)
		wasStopped := x.stopped.Load()
		it.accepted = x.p.TrySubmit(s.plain(x, it, r.IntN(6), me))
		if it.accepted && wasStopped {
			s.errorf("TrySubmit to %s after its stop returned accepted the task", x.name)
		}
		if !it.accepted && !x.stopping.Load() && (x.name == "root" || x.name == "AA" || x.name == "E") {
			s.errorf("TrySubmit to %s, unbounded and reached by no stop, returned false", x.name)
		}
	case d < 9: // SubmitContext, sometimes with an ended context
		it := s.item("SubmitContext to " + x.name)
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		if r.IntN(2) == 0 {
			ctx = ctxDone
		}
		err := x.p.SubmitContext(ctx, s.plain(x, it, r.IntN(6), me))
		it.accepted = err == nil
		if ctx == ctxDone && err == nil {
			s.errorf("SubmitContext to %s with an ended context accepted the task", x.name)
		}
	case d < 12: // Keyed, on D or on A
		onA := r.IntN(3) == 0
		key := sub*4 + r.IntN(4)
		kx, k := s.kpool, s.keyed
		if onA {
			key += 1000
			kx, k = s.byName["A"], s.keyedA
		}
		s.mu.Lock()
		seq := s.keySeq[key]
		s.keySeq[key]++
		s.mu.Unlock()
		it := s.item(fmt.Sprintf("keyed task %d of key %d", seq, key))
		kind := r.IntN(5) // no TrySubmit from inside: D runs keyed tasks only
		body := s.plain(kx, it, kind, me)
		task := func() {
			if !s.handback.Load() {
				s.keyCheck.enter(key, seq)
				defer s.keyCheck.exit(key)
			}
			body()
		}
		switch r.IntN(3) {
		case 0:
			it.accepted = k.TrySubmit(key, task)
		case 1:
			it.accepted = k.SubmitContext(ctxDone, key, task) == nil
			if it.accepted {
				s.errorf("Keyed.SubmitContext with an ended context accepted the task")
			}
		default:
			wasStopped := kx.stopped.Load()
			err := k.Submit(key, task)
			it.accepted = err == nil
			if !onA {
				s.refusal(kx, "Keyed.Submit", wasStopped, err)
			}
		}
	case d < 15: // a future, sometimes canceled
		if x.inline {
			x = s.root
		}
		it := s.item("Go on " + x.name)
		id := r.Int()
		var f *crew.Future[int]
		wasStopped := x.stopped.Load()
		ctx, cancel := context.WithCancel(context.Background())
		if r.IntN(2) == 0 {
			f = crew.Go(x.p, func() (int, error) {
				it.runs.Add(1)
				x.enter()
				defer x.leave()
				return id, nil
			})
		} else {
			f = crew.GoContext(ctx, x.p, func(context.Context) (int, error) {
				it.runs.Add(1)
				x.enter()
				defer x.leave()
				return id, nil
			})
		}
		if wasStopped {
			select {
			case <-f.Done():
				if _, err := f.Wait(); !errors.Is(err, crew.ErrStopped) {
					s.errorf("a future on %s after its stop returned: Wait returned %v, want ErrStopped", x.name, err)
				}
			default:
				s.errorf("a future on %s after its stop returned is not done at once", x.name)
			}
		}
		sf := stormFuture{it: it, f: f, id: id, cancel: cancel}
		switch r.IntN(4) {
		case 0:
			sf.canceled = f.Cancel()
		case 1:
			cancel()
		}
		s.mu.Lock()
		s.futures = append(s.futures, sf)
		s.mu.Unlock()
	case d < 18: // a group, its functions nesting waits inside the tree
		if x.inline {
			x = s.byName["AA"]
		}
		var g *crew.Group
		if r.IntN(3) == 0 {
			g, _ = x.p.GroupAll(context.Background())
		} else {
			g, _ = x.p.Group(context.Background())
		}
		n := 1 + r.IntN(4)
		its := make([]*stormItem, n)
		for i := range n {
			f, it := s.fn(r, x, 0)
			its[i] = it
			g.Go(f)
		}
		var err error
		if e := within(goRun(func() { err = g.Wait() }), "Group.Wait on "+x.name); e != nil {
			s.errorf("%v: %s", e, s.dump())
			return
		}
		if err == nil {
			for _, it := range its {
				if it.runs.Load() != 1 {
					s.errorf("group on %s: Wait returned nil but a function ran %d times", x.name, it.runs.Load())
				}
			}
		}
	default: // Map or ForEach
		if x.inline {
			x = s.byName["C"]
		}
		n := 1 + r.IntN(5)
		its := make([]*stormItem, n)
		in := make([]int, n)
		for i := range n {
			in[i] = i
			its[i] = s.item("Map fn on " + x.name)
		}
		var out []int
		var err error
		each := r.IntN(2) == 0
		done := goRun(func() {
			if each {
				err = crew.ForEach(context.Background(), x.p, slices.Values(in), func(_ context.Context, v int) error {
					its[v].runs.Add(1)
					x.enter()
					defer x.leave()
					return nil
				})
				return
			}
			out, err = crew.Map(context.Background(), x.p, in, func(_ context.Context, v int) (int, error) {
				its[v].runs.Add(1)
				x.enter()
				defer x.leave()
				return v + 100, nil
			})
		})
		if e := within(done, "Map or ForEach on "+x.name); e != nil {
			s.errorf("%v (ForEach %v, %d inputs): %s", e, each, n, s.dump())
			return
		}
		if err == nil {
			for i := range n {
				if its[i].runs.Load() != 1 || (!each && out[i] != i+100) {
					s.errorf("Map/ForEach on %s returned nil but input %d ran %d times", x.name, i, its[i].runs.Load())
				}
			}
		}
	}
}

// runStorm runs one storm and checks the tree once it has exited.
func runStorm(t *testing.T, seed uint64, submitters, ops int) {
	s := newStorm(t, seed)
	ctxDone, cancel := context.WithCancel(context.Background())
	cancel()
	stop := make(chan struct{})
	var side sync.WaitGroup
	s.watch(&side, stop)
	pauseStorm(&side, stop, 200*time.Microsecond, s.root.p, s.byName["A"].p, s.byName["AA"].p,
		s.byName["B"].p, s.byName["C"].p, s.kpool.p)
	for i, x := range s.pools {
		r := rand.New(rand.NewPCG(seed, uint64(100+i)))
		repeatUntil(&side, stop, func() {
			s.resize(x, r.IntN(5)) // 0: CPUs
			time.Sleep(300 * time.Microsecond)
		})
	}
	// PauseAndWait with a context that ends, then Resume; rate limits changed and removed.
	pr := rand.New(rand.NewPCG(seed, 9))
	repeatUntil(&side, stop, func() {
		x := s.pools[pr.IntN(len(s.pools))]
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		err := x.p.PauseAndWait(ctx)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			s.errorf("%s: PauseAndWait returned %v", x.name, err)
		}
		time.Sleep(200 * time.Microsecond)
		x.p.Resume()
		time.Sleep(400 * time.Microsecond)
		y := s.byName[[]string{"AA", "E", "root"}[pr.IntN(3)]]
		if pr.IntN(2) == 0 {
			y.p.SetRateLimit(math.Inf(1), 1)
		} else {
			y.p.SetRateLimit(float64(20000+pr.IntN(20000)), 1+pr.IntN(8))
		}
	})
	total := int64(submitters * ops)
	var done atomic.Int64
	// Which sub-pool StopNow takes, and when Shutdown comes.
	pick := rand.New(rand.NewPCG(seed, 7))
	victim := []string{"AA", "C", "D", "A", "root"}[pick.IntN(5)]
	downs := []string{"root", "A"}[pick.IntN(2)]
	stopNowAt, shutdownAt := total*int64(3+pick.IntN(3))/10, total*int64(7+pick.IntN(3))/10
	var events sync.WaitGroup
	var shutdownErr error
	var subs sync.WaitGroup
	start := make(chan struct{})
	for i := range submitters {
		subs.Add(1)
		go func() {
			defer subs.Done()
			<-start
			me := stormGoid()
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			for range ops {
				if s.failed.Load() {
					return
				}
				s.op(r, i, me, ctxDone)
				switch done.Add(1) {
				case stopNowAt:
					events.Add(1)
					go func() {
						defer events.Done()
						x := s.byName[victim]
						var back []func()
						s.stopTree(x, func() { back = x.p.StopNow() })
						s.mu.Lock()
						s.back = append(s.back, back...)
						s.returned[victim] += len(back)
						s.mu.Unlock()
					}()
				case shutdownAt:
					events.Add(1)
					go func() {
						defer events.Done()
						ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
						defer cancel()
						x := s.byName[downs]
						s.stopTree(x, func() {
							if err := within(goRun(func() { shutdownErr = x.p.Shutdown(ctx) }), "Shutdown with a context that ends"); err != nil {
								s.errorf("%v", err)
							}
						})
					}()
				}
			}
		}()
	}
	close(start)
	select {
	case <-goRun(subs.Wait):
	case <-time.After(30 * time.Second): // past the 10 s each submitter's own waits allow
		t.Fatalf("seed %d: the submitters did not return: %s", seed, s.dump())
	}
	awaitReturn(t, "StopNow and Shutdown", goRun(events.Wait))
	close(stop)
	awaitReturn(t, "the pause, resize and stats storms", goRun(side.Wait))
	awaitReturn(t, "StopAndWait of the root", goRun(s.root.p.StopAndWait))
	awaitReturn(t, "Keyed.Wait", goRun(s.keyed.Wait))
	awaitReturn(t, "Keyed.Wait of the Keyed on A", goRun(s.keyedA.Wait))
	if shutdownErr != nil && !errors.Is(shutdownErr, context.DeadlineExceeded) {
		s.errorf("Shutdown returned %v, want nil or context.DeadlineExceeded", shutdownErr)
	}
	if s.failed.Load() {
		return
	}
	s.check()
}

// check runs once the tree has exited: every function's fate, the Stats identities and the
// hook counts.
func (s *storm) check() {
	t := s.t
	// Futures first: their Waits must return, each with the fate of its function.
	for _, sf := range s.futures {
		var v int
		var err error
		if e := within(goRun(func() { v, err = sf.f.Wait() }), "Future.Wait"); e != nil {
			s.errorf("%v", e)
			return
		}
		sf.cancel()
		runs := sf.it.runs.Load()
		if sf.f.Cancel() {
			s.errorf("Cancel reported true after Wait had returned (%d, %v)", v, err)
		}
		if v2, err2 := sf.f.Wait(); v2 != v || err2 != err {
			s.errorf("a second Wait returned (%d, %v), the first (%d, %v)", v2, err2, v, err)
		}
		switch {
		case runs > 1:
			s.errorf("a future's function ran %d times", runs)
		case sf.canceled && (runs != 0 || !errors.Is(err, context.Canceled)):
			s.errorf("Cancel reported true, but the function ran %d times and Wait returned %v", runs, err)
		case err == nil && (runs != 1 || v != sf.id):
			s.errorf("Wait returned (%d, nil) for %d, after %d runs", v, sf.id, runs)
		case err != nil && runs != 0:
			s.errorf("the function ran but Wait returned %v", err)
		}
	}
	s.handback.Store(true)
	for _, f := range s.back {
		f()
	}
	for _, it := range s.items {
		runs, handed := it.runs.Load(), it.handed.Load()
		switch {
		case runs > 1 || handed > 1 || runs+handed > 1:
			s.errorf("%s: ran %d times and came back %d times", it.what, runs, handed)
		case it.elsewhere:
		case it.accepted && runs+handed != 1:
			s.errorf("%s: accepted, but ran %d times and came back %d times", it.what, runs, handed)
		case !it.accepted && runs+handed != 0:
			s.errorf("%s: refused, but ran %d times and came back %d times", it.what, runs, handed)
		}
	}
	s.keyCheck.check(t, fmt.Sprintf("seed %d", s.seed))
	if n := s.deadlines.Load(); n > 0 {
		s.errorf("%d task-timeout contexts of AA did not end", n)
	}
	for _, x := range s.pools {
		if h := x.gauge.high.Load(); h > 0 {
			s.errorf("%s: up to %d tasks ran above the limit", x.name, h)
		}
	}
	var panicked uint64
	for _, x := range s.pools {
		st := x.p.Stats()
		panicked += st.Panicked
		if ended := st.Completed + st.Panicked + st.Discarded + st.Returned + st.Skipped; st.Accepted != ended ||
			st.Running != 0 || st.Waiting != 0 || st.Idle != 0 {
			s.errorf("%s after StopAndWait: Accepted %d, ended %d: %+v", x.name, st.Accepted, ended, st)
		}
		h := x.hooks
		if h.started.Load() != h.finished.Load() {
			s.errorf("%s: %d Started hooks but %d Finished", x.name, h.started.Load(), h.finished.Load())
		}
		if x.name == "A" { // the Keyed on A: the hooks see keyed tasks, Stats their turns
			if d := uint64(h.discarded.Load()); d < st.Discarded || d > st.Discarded+s.keyedA.Stats().Discarded {
				s.errorf("A: %d Discarded hooks, Stats.Discarded %d, keyed %d", d, st.Discarded, s.keyedA.Stats().Discarded)
			}
		} else if uint64(h.discarded.Load()) != st.Discarded {
			s.errorf("%s: %d Discarded hooks, Stats.Discarded %d", x.name, h.discarded.Load(), st.Discarded)
		}
		switch x.name {
		case "AA", "B", "C", "E", "F": // no sub-pool and no Keyed: the hooks see what Stats counts
			if uint64(h.started.Load()) != st.Completed+st.Panicked {
				s.errorf("%s: %d Started hooks, Stats Completed+Panicked %d: %+v", x.name, h.started.Load(), st.Completed+st.Panicked, st)
			}
			if uint64(h.finPanicked.Load()) != st.Panicked {
				s.errorf("%s: %d Finished hooks with Panicked, Stats.Panicked %d", x.name, h.finPanicked.Load(), st.Panicked)
			}
			if uint64(h.queued.Load()) != st.Accepted+uint64(h.rejected.Load()) {
				s.errorf("%s: %d Queued hooks, but Accepted %d + %d Rejected hooks", x.name, h.queued.Load(), st.Accepted, h.rejected.Load())
			}
			if uint64(h.rejected.Load()) < st.Rejected+st.Canceled {
				s.errorf("%s: %d Rejected hooks, fewer than Stats.Rejected+Canceled %d", x.name, h.rejected.Load(), st.Rejected+st.Canceled)
			}
		case "D": // only keyed tasks: the hooks see what Keyed.Stats counts
			ks := s.keyed.Stats()
			if uint64(h.started.Load()) != ks.Completed+ks.Panicked {
				s.errorf("D: %d Started hooks, Keyed Completed+Panicked %d", h.started.Load(), ks.Completed+ks.Panicked)
			}
			if uint64(h.queued.Load()) != ks.Accepted+uint64(h.rejected.Load()) {
				s.errorf("D: %d Queued hooks, but Keyed Accepted %d + %d Rejected hooks", h.queued.Load(), ks.Accepted, h.rejected.Load())
			}
		}
	}
	c1, c2 := s.byName["C"].hooks, &s.secondC
	for i, pair := range [][2]*atomic.Int64{{&c1.queued, &c2.queued}, {&c1.started, &c2.started},
		{&c1.finished, &c2.finished}, {&c1.finPanicked, &c2.finPanicked}, {&c1.rejected, &c2.rejected},
		{&c1.discarded, &c2.discarded}} {
		if a, b := pair[0].Load(), pair[1].Load(); a != b {
			s.errorf("C: the first WithHooks saw %d of hook %d, the second %d", a, i, b)
		}
	}
	ks := s.keyed.Stats()
	if ended := ks.Completed + ks.Panicked + ks.Discarded + ks.Returned; ks.Accepted != ended || ks.Running != 0 || ks.Waiting != 0 {
		s.errorf("Keyed after Wait: Accepted %d, ended %d: %+v", ks.Accepted, ended, ks)
	}
	ka := s.keyedA.Stats()
	if ended := ka.Completed + ka.Panicked + ka.Discarded + ka.Returned; ka.Accepted != ended || ka.Running != 0 || ka.Waiting != 0 {
		s.errorf("Keyed on A after Wait: Accepted %d, ended %d: %+v", ka.Accepted, ended, ka)
	}
	if got := s.panics.Load(); uint64(got) != panicked+ks.Panicked+ka.Panicked {
		s.errorf("the panic handler saw %d panics, Stats count %d", got, panicked+ks.Panicked+ka.Panicked)
	}
	if a := s.byName["A"].p.Stats(); uint64(s.discards) > a.Discarded+ka.Discarded {
		s.errorf("A: %d tasks went to the discard handler, Stats.Discarded %d, keyed ones %d", s.discards, a.Discarded, ka.Discarded)
	}
	var returned uint64
	handed := 0
	for _, x := range s.pools {
		returned += x.p.Stats().Returned
	}
	for _, n := range s.returned {
		handed += n
	}
	if uint64(handed) > returned+ks.Returned+ka.Returned {
		s.errorf("StopNow handed back %d tasks, Stats.Returned of the tree %d", handed, returned+ks.Returned+ka.Returned)
	}
}

// stormSize is the number of submitters, operations each and seeds per test.
func stormSize() (submitters, ops, seeds int) {
	submitters, ops, seeds = 4, 800, 4
	if racetest.Enabled || testing.Short() {
		ops, seeds = 250, 3
	}
	return
}

// TestAdvStormTreeKeepsEveryPromise runs seeded storms of every call against a tree of
// sub-pools and checks, while they run and once the tree has exited, what the Stats, Hooks,
// Pool.Sub, StopNow, Shutdown, Future.Cancel, Group and Map docs promise.
func TestAdvStormTreeKeepsEveryPromise(t *testing.T) {
	submitters, ops, seeds := stormSize()
	for i := range seeds {
		seed := uint64(0x5eed0000 + i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runStorm(t, seed, submitters, ops)
		})
	}
}

// nestedTree is a tree of one-slot pools with one-task queues, for the nested waits.
type nestedTree struct {
	t     *testing.T
	seed  uint64
	pools []*stormPool
	runs  atomic.Int64 // functions run
	made  atomic.Int64 // functions given
}

// work runs one nested fork/join on x from ctx (a context crew gave a function of x or of a
// sub-pool of x, or context.Background at the top), depth levels deep, through one of the
// calls whose wait helps, and returns its error.
func (n *nestedTree) work(ctx context.Context, r *rand.Rand, x *stormPool, depth int) error {
	fanout := 1 + r.IntN(3)
	seeds := make([]uint64, fanout)
	for i := range seeds {
		seeds[i] = r.Uint64()
	}
	n.made.Add(int64(fanout))
	body := func(ctx context.Context, i int) error {
		n.runs.Add(1)
		x.enter()
		if depth == 0 {
			runtime.Gosched()
			x.leave()
			return nil
		}
		x.leave() // it nests: what it runs itself runs in its slot
		r := rand.New(rand.NewPCG(seeds[i], uint64(depth)))
		err := n.work(ctx, r, ancestorOrSelf(r, x), depth-1)
		x.enter()
		x.leave()
		return err
	}
	switch r.IntN(5) {
	case 0, 1:
		var g *crew.Group
		if r.IntN(2) == 0 {
			g, _ = x.p.Group(ctx)
		} else {
			g, _ = x.p.GroupAll(ctx)
		}
		for i := range fanout {
			g.Go(func(ctx context.Context) error { return body(ctx, i) })
		}
		return g.Wait()
	case 2:
		res, _ := crew.NewResults[int](ctx, x.p)
		for i := range fanout {
			res.Go(func(ctx context.Context) (int, error) { return i, body(ctx, i) })
		}
		out, err := res.Wait()
		if err == nil && !slices.Equal(out, []int{0, 1, 2}[:fanout]) {
			return fmt.Errorf("Results.Wait on %s returned %v", x.name, out)
		}
		return err
	case 3:
		in := []int{0, 1, 2}[:fanout]
		out, err := crew.Map(ctx, x.p, in, func(ctx context.Context, i int) (int, error) { return i, body(ctx, i) })
		if err == nil && !slices.Equal(out, in) {
			return fmt.Errorf("Map on %s returned %v", x.name, out)
		}
		return err
	default:
		fs := make([]*crew.Future[int], fanout)
		for i := range fanout {
			fs[i] = crew.GoContext(ctx, x.p, func(ctx context.Context) (int, error) { return i, body(ctx, i) })
		}
		var first error
		for i, f := range fs {
			v, err := f.Wait()
			if err == nil && v != i {
				err = fmt.Errorf("Future.Wait on %s returned %d, want %d", x.name, v, i)
			}
			if first == nil {
				first = err
			}
		}
		return first
	}
}

// TestAdvStormNestedWaitsOnOneSlotTreeNeverDeadlock gives a tree of one-slot pools with
// one-task queues (a sub-pool of a sub-pool and a sibling) nested fork/joins three deep,
// each level on the pool of its function or on a pool above it, through Group, GroupAll,
// Results, Map and GoContext, while Pause/Resume and Resize storms run: the package doc's
// "Waits that help" promises each completes, with every function run once, and the limits
// hold, since a waiting function lends its slot and never takes a new one.
func TestAdvStormNestedWaitsOnOneSlotTreeNeverDeadlock(t *testing.T) {
	drivers, rounds, seeds := 3, 40, 3
	if racetest.Enabled || testing.Short() {
		rounds, seeds = 15, 2
	}
	for k := range seeds {
		seed := uint64(0xdeed0000 + k)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			n := &nestedTree{t: t, seed: seed}
			mk := func(name string, up *stormPool, p *crew.Pool) *stormPool {
				x := &stormPool{name: name, up: up, p: p}
				x.gauge.limit.Store(1)
				x.ceiling.Store(1)
				n.pools = append(n.pools, x)
				return x
			}
			root := mk("root", nil, crew.New(1, crew.WithQueueSize(1)))
			a := mk("A", root, root.p.Sub(1, crew.WithQueueSize(1), crew.WithPriority(1)))
			mk("AA", a, a.p.Sub(1, crew.WithQueueSize(1), crew.WithTaskTimeout(time.Minute)))
			mk("B", root, root.p.Sub(1, crew.WithQueueSize(1), crew.WithRateLimit(50000, 4)))
			s := &storm{t: t, seed: seed}
			stop := make(chan struct{})
			var side sync.WaitGroup
			pauseStorm(&side, stop, 200*time.Microsecond, root.p, a.p, n.pools[2].p, n.pools[3].p)
			for i, x := range n.pools {
				r := rand.New(rand.NewPCG(seed, uint64(50+i)))
				repeatUntil(&side, stop, func() {
					s.resize(x, 1+r.IntN(2))
					time.Sleep(300 * time.Microsecond)
				})
			}
			var wg sync.WaitGroup
			errs := make(chan error, drivers*rounds)
			for d := range drivers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(seed, uint64(d)))
					for range rounds {
						x := n.pools[r.IntN(len(n.pools))]
						if err := n.work(context.Background(), r, x, 1+r.IntN(3)); err != nil {
							errs <- fmt.Errorf("a fork/join on %s: %w", x.name, err)
							return
						}
					}
				}()
			}
			if err := within(goRun(wg.Wait), "the nested fork/joins"); err != nil {
				t.Fatalf("seed %d: %v; stats %+v %+v %+v %+v", seed, err, root.p.Stats(), a.p.Stats(),
					n.pools[2].p.Stats(), n.pools[3].p.Stats())
			}
			close(stop)
			awaitReturn(t, "the pause and resize storms", goRun(side.Wait))
			awaitReturn(t, "StopAndWait", goRun(root.p.StopAndWait))
			close(errs)
			for err := range errs {
				t.Errorf("seed %d: %v", seed, err)
			}
			if n.runs.Load() != n.made.Load() {
				t.Errorf("seed %d: %d functions given, %d ran", seed, n.made.Load(), n.runs.Load())
			}
			for _, x := range n.pools {
				if h := x.gauge.high.Load(); h > 0 {
					t.Errorf("seed %d: %s: up to %d tasks ran above the limit", seed, x.name, h)
				}
				idleIdentity(t, x.name, x.p.Stats())
			}
		})
	}
}

// TestAdvStormHelpingGoIntoDiscardOldestBehindACanceledHead attacks "Waits that help" (Pool.Group:
// "Go runs a function itself where p's full bounded queue would make it wait: nested groups
// of any depth complete") where DiscardOldest meets a sub-pool of a sub-pool and
// Future.Cancel: A's queue (size 1) holds a canceled future's place and, beyond its bound, a
// worker of its sub-pool AA, which DiscardOldest must keep; a function holding A's only slot
// then calls Go on a group made from its context. The storms above found it blocking.
func TestAdvStormHelpingGoIntoDiscardOldestBehindACanceledHead(t *testing.T) {
	root := crew.New(2)
	a := root.Sub(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest))
	aa := a.Sub(1)
	started, release := make(chan struct{}), make(chan struct{})
	outer, _ := a.Group(context.Background())
	outer.Go(func(ctx context.Context) error {
		close(started)
		<-release
		g, _ := a.Group(ctx)
		g.Go(func(context.Context) error { return nil }) // A's queue is full: run it here
		return g.Wait()
	})
	awaitReturn(t, "the outer function's start", started)
	f := crew.Go(a, func() (int, error) { return 1, nil }) // fills A's queue
	must(t, aa.Submit(func() {}))                          // AA's worker waits in A's queue
	if !f.Cancel() {
		t.Fatal("Cancel of a queued future reported false")
	}
	close(release)
	if err := returnsWithin(t, "the outer group's Wait", outer.Wait); err != nil {
		t.Fatal(err)
	}
	root.StopAndWait()
	idleIdentity(t, "A", a.Stats())
}

// TestAdvStormCallerRunsGoexitAndPanicOnASubPoolAreCounted attacks the CallerRuns doc on a
// sub-pool of a sub-pool: a task run on its submitter that calls runtime.Goexit ends that
// goroutine and counts as completed (Stats.Completed: "returned (or called
// runtime.Goexit)"), one that panics goes to the panic handler on the submitter and Submit
// returns nil; both count in Accepted and CallerRan, the hooks see each start and finish,
// and the tree's identities hold once it is idle.
func TestAdvStormCallerRunsGoexitAndPanicOnASubPoolAreCounted(t *testing.T) {
	var panics atomic.Int64
	root := crew.New(2, crew.WithPanicHandler(func(any, []byte) { panics.Add(1) }))
	mid := root.Sub(2)
	var h stormHooks
	b := mid.Sub(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithHooks(h.hooks()))
	task, started, release := blocker()
	must(t, b.Submit(task))
	awaitReturn(t, "the blocker's start", started)
	must(t, b.Submit(func() {})) // fills the queue
	var ranGoexit, ranPanic atomic.Bool
	awaitReturn(t, "a caller-run Goexit", goRun(func() {
		_ = b.Submit(func() {
			ranGoexit.Store(true)
			runtime.Goexit()
		})
		t.Error("Submit returned after its caller-run task called runtime.Goexit")
	}))
	var err error
	awaitReturn(t, "a caller-run panic", goRun(func() {
		err = b.Submit(func() {
			ranPanic.Store(true)
			panic("caller-run")
		})
	}))
	if err != nil || !ranGoexit.Load() || !ranPanic.Load() {
		t.Fatalf("Submit returned %v; Goexit ran %v, panic ran %v", err, ranGoexit.Load(), ranPanic.Load())
	}
	close(release)
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	s := b.Stats()
	idleIdentity(t, "b", s)
	if s.Accepted != 4 || s.CallerRan != 2 || s.Panicked != 1 || s.Completed != 3 {
		t.Errorf("b: %+v, want Accepted 4, CallerRan 2, Panicked 1, Completed 3", s)
	}
	if panics.Load() != 1 {
		t.Errorf("the panic handler saw %d panics, want 1", panics.Load())
	}
	if h.started.Load() != 4 || h.finished.Load() != 4 || h.finPanicked.Load() != 1 || h.queued.Load() != 4 {
		t.Errorf("hooks: Queued %d, Started %d, Finished %d (%d panicked); want 4, 4, 4 (1)",
			h.queued.Load(), h.started.Load(), h.finished.Load(), h.finPanicked.Load())
	}
	idleIdentity(t, "mid", mid.Stats())
	idleIdentity(t, "root", root.Stats())
}

// TestAdvStormHelpingGoContextIntoDiscardOldestBehindACanceledHead is the test above with
// GoContext inside GoContext: the inner GoContext, given the outer function's context, runs
// its function on the caller where A's full queue would make it wait.
func TestAdvStormHelpingGoContextIntoDiscardOldestBehindACanceledHead(t *testing.T) {
	root := crew.New(2)
	a := root.Sub(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest))
	aa := a.Sub(1)
	started, release := make(chan struct{}), make(chan struct{})
	outer := crew.GoContext(context.Background(), a, func(ctx context.Context) (int, error) {
		close(started)
		<-release
		return crew.GoContext(ctx, a, func(context.Context) (int, error) { return 7, nil }).Wait()
	})
	awaitReturn(t, "the outer function's start", started)
	f := crew.Go(a, func() (int, error) { return 1, nil }) // fills A's queue
	must(t, aa.Submit(func() {}))                          // AA's worker waits in A's queue
	if !f.Cancel() {
		t.Fatal("Cancel of a queued future reported false")
	}
	close(release)
	var v int
	err := returnsWithin(t, "the outer future's Wait", func() error {
		var err error
		v, err = outer.Wait()
		return err
	})
	if err != nil || v != 7 {
		t.Fatalf("outer Wait = %d, %v; want 7, nil", v, err)
	}
	root.StopAndWait()
	idleIdentity(t, "A", a.Stats())
}
