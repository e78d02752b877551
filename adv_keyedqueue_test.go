package crew_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// Keyed on pools with bounded queues under each overflow policy, on priority sub-pools, with
// Pause/Resume, shrinking Resize, StopNow and Shutdown: per-key order, Keyed.Stats, hooks, and
// that no accepted keyed task is lost or left hanging.

// kqGID returns the id of the calling goroutine, read from its stack header.
func kqGID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// kqHooks counts each hook's calls.
type kqHooks struct {
	queued, started, finished, rejected, discarded, panickedFin atomic.Int64
	stopped, full, canceled                                     atomic.Int64
}

func (h *kqHooks) hooks() crew.Hooks {
	return crew.Hooks{
		Queued:  func(crew.TaskInfo) { h.queued.Add(1) },
		Started: func(crew.TaskInfo) { h.started.Add(1) },
		Finished: func(i crew.TaskInfo) {
			h.finished.Add(1)
			if i.Panicked {
				h.panickedFin.Add(1)
			}
		},
		Rejected: func(err error) {
			h.rejected.Add(1)
			switch {
			case errors.Is(err, crew.ErrStopped):
				h.stopped.Add(1)
			case errors.Is(err, crew.ErrQueueFull):
				h.full.Add(1)
			default:
				h.canceled.Add(1)
			}
		},
		Discarded: func(crew.TaskInfo) { h.discarded.Add(1) },
	}
}

func (h *kqHooks) String() string {
	return fmt.Sprintf("Queued %d Started %d Finished %d (panicked %d) Rejected %d (stopped %d, full %d, canceled %d) Discarded %d",
		h.queued.Load(), h.started.Load(), h.finished.Load(), h.panickedFin.Load(), h.rejected.Load(),
		h.stopped.Load(), h.full.Load(), h.canceled.Load(), h.discarded.Load())
}

// What a keyed task does besides being recorded.
const (
	kqReturns = iota
	kqGoexits
	kqPanicsNil
)

// kqLedger records, for each task id, whether it ran, was dropped (given to the discard
// handler) or was handed back by StopNow: the dropped and handed-back functions are called
// afterwards with the ledger in a reclaiming mode, in which they only count themselves.
type kqLedger struct {
	c        *keyChecker
	mode     atomic.Int32 // 0: run; 1: count as dropped; 2: count as handed back
	runs     atomic.Int64 // tasks that ran
	ran      []atomic.Int32
	dropped  []atomic.Int32
	returned []atomic.Int32
	accepted []atomic.Bool
	key, seq []int
	kind     []int
	ranOn    []atomic.Uint64 // the goroutine a task ran on
	by       []atomic.Uint64 // the goroutine that submitted it

	dmu      sync.Mutex
	dropFns  []func()
	retOrder []int // the ids of the functions settle was given, in their order
}

func newKQLedger(n int) *kqLedger {
	return &kqLedger{
		c: newKeyChecker(), ran: make([]atomic.Int32, n), dropped: make([]atomic.Int32, n),
		returned: make([]atomic.Int32, n), accepted: make([]atomic.Bool, n),
		key: make([]int, n), seq: make([]int, n), kind: make([]int, n),
		ranOn: make([]atomic.Uint64, n), by: make([]atomic.Uint64, n),
	}
}

// task returns task id, of key (-1: a plain task, not order-checked) and seq in the key.
func (l *kqLedger) task(id, key, seq, kind int) func() {
	l.key[id], l.seq[id], l.kind[id] = key, seq, kind
	return func() {
		switch l.mode.Load() {
		case 1:
			l.dropped[id].Add(1)
			return
		case 2:
			l.returned[id].Add(1)
			l.retOrder = append(l.retOrder, id)
			return
		}
		l.ranOn[id].Store(kqGID())
		if key >= 0 {
			l.c.enter(key, seq)
			defer l.c.exit(key)
		}
		l.ran[id].Add(1)
		l.runs.Add(1)
		switch kind {
		case kqGoexits:
			runtime.Goexit()
		case kqPanicsNil:
			panic(nil)
		}
	}
}

// discard is a discard handler that keeps the dropped functions.
func (l *kqLedger) discard(v any) {
	f, ok := v.(func())
	if !ok {
		panic(fmt.Sprintf("discard handler got %T", v))
	}
	l.dmu.Lock()
	l.dropFns = append(l.dropFns, f)
	l.dmu.Unlock()
}

// settle calls the dropped functions and those StopNow returned, in reclaiming mode. Call it
// once nothing runs any more.
func (l *kqLedger) settle(returned []func()) {
	l.mode.Store(1)
	l.dmu.Lock()
	for _, f := range l.dropFns {
		f()
	}
	l.dmu.Unlock()
	l.mode.Store(2)
	for _, f := range returned {
		f()
	}
	l.mode.Store(0)
}

// kqTally is what a ledger found over a range of ids.
type kqTally struct{ accepted, ran, dropped, returned, goexited, panicked int }

// check fails t unless each accepted task in ids ran, was dropped or was handed back exactly
// once, no task not accepted did any of these, and the keys' order held; it returns the tally.
func (l *kqLedger) check(t *testing.T, what string, ids []int) kqTally {
	t.Helper()
	l.c.check(t, what)
	var n kqTally
	for _, id := range ids {
		r, d, ret := int(l.ran[id].Load()), int(l.dropped[id].Load()), int(l.returned[id].Load())
		if !l.accepted[id].Load() {
			if r+d+ret != 0 {
				t.Fatalf("%s: task %d (key %d seq %d) was refused, but ran %d, dropped %d, handed back %d times",
					what, id, l.key[id], l.seq[id], r, d, ret)
			}
			continue
		}
		n.accepted++
		if r+d+ret != 1 {
			t.Fatalf("%s: accepted task %d (key %d seq %d) ran %d, dropped %d, handed back %d times: want once in all",
				what, id, l.key[id], l.seq[id], r, d, ret)
		}
		n.ran += r
		n.dropped += d
		n.returned += ret
		if r == 1 {
			switch l.kind[id] {
			case kqGoexits:
				n.goexited++
			case kqPanicsNil:
				n.panicked++
			}
		}
	}
	return n
}

// kqIDs returns the ids lo..hi-1.
func kqIDs(lo, hi int) []int {
	ids := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		ids = append(ids, i)
	}
	return ids
}

// kqKind picks what task seq of a key does: every 7th calls runtime.Goexit, every 11th
// panics with nil.
func kqKind(seq int) int {
	switch {
	case seq%7 == 3:
		return kqGoexits
	case seq%11 == 5:
		return kqPanicsNil
	}
	return kqReturns
}

// kqSnapshots polls k's Stats, and its pool's, until stop is closed and reports the first
// snapshot that breaks their accounting. Keyed.Stats: every accepted keyed task is in exactly
// one of Waiting, Running, Completed, Panicked, Discarded and Returned; none is negative;
// Running is at most the number of keys (one task per key at a time) and at most maxRunning;
// Skipped, CallerRan and Idle are 0. Pool.Stats: "Running+Waiting counts each accepted task
// that has not ended exactly once". Neither has a counter go back.
func kqSnapshots(kp *kqPool, keys int, stop <-chan struct{}) <-chan error {
	out := make(chan error, 1)
	go func() {
		defer close(out)
		var prev, pprev crew.Stats
		for {
			s := kp.k.Stats()
			sum := uint64(max(0, s.Waiting)) + uint64(max(0, s.Running)) + s.Completed + s.Panicked + s.Discarded + s.Returned
			switch {
			case s.Waiting < 0 || s.Running < 0:
				out <- fmt.Errorf("Keyed.Stats: negative Waiting or Running: %+v", s)
				return
			case sum != s.Accepted:
				out <- fmt.Errorf("Keyed.Stats: Waiting+Running+Completed+Panicked+Discarded+Returned = %d, Accepted %d: %+v", sum, s.Accepted, s)
				return
			case s.Running > keys || s.Running > kp.limit:
				out <- fmt.Errorf("Keyed.Stats: Running %d with %d keys and a limit of %d: %+v", s.Running, keys, kp.limit, s)
				return
			case s.Skipped != 0 || s.CallerRan != 0 || s.Idle != 0:
				out <- fmt.Errorf("Keyed.Stats: Skipped, CallerRan or Idle not 0: %+v", s)
				return
			case countersWentBack(s, prev):
				out <- fmt.Errorf("Keyed.Stats: a counter went back: %+v after %+v", s, prev)
				return
			}
			prev = s
			ps := kp.p.Stats()
			ended := ps.Completed + ps.Panicked + ps.Discarded + ps.Returned + ps.Skipped
			switch {
			case ps.Waiting < 0 || ps.Running < 0:
				out <- fmt.Errorf("Pool.Stats: negative Waiting or Running: %+v", ps)
				return
			case ended+uint64(max(0, ps.Waiting))+uint64(max(0, ps.Running)) != ps.Accepted:
				out <- fmt.Errorf("Pool.Stats: Running+Waiting %d, but Accepted %d less the ended %d: %+v",
					ps.Running+ps.Waiting, ps.Accepted, ended, ps)
				return
			case countersWentBack(ps, pprev):
				out <- fmt.Errorf("Pool.Stats: a counter went back: %+v after %+v", ps, pprev)
				return
			}
			pprev = ps
			select {
			case <-stop:
				return
			default:
			}
			time.Sleep(20 * time.Microsecond)
		}
	}()
	return out
}

// kqWaitErr fails t with the error ch reports, if any, or if ch reports nothing within 10 s.
func kqWaitErr(t *testing.T, what string, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no answer within 10 s", what)
	}
}

// kqPolicies are the pool options a keyed task must pass through unbounded and never run on
// its submitter.
var kqPolicies = []struct {
	name string
	opts []crew.Option
}{
	{"Block", []crew.Option{crew.WithOverflow(crew.Block)}},
	{"NonBlocking", []crew.Option{crew.WithNonBlocking()}},
	{"Reject", []crew.Option{crew.WithOverflow(crew.Reject)}},
	{"CallerRuns", []crew.Option{crew.WithOverflow(crew.CallerRuns)}},
	{"DiscardOldest", []crew.Option{crew.WithOverflow(crew.DiscardOldest)}},
	{"BlockMaxWait", []crew.Option{crew.WithMaxWait(time.Millisecond)}},
	{"BlockMaxBlocked0", []crew.Option{crew.WithMaxBlocked(0)}},
	{"CallerRunsMaxWait", []crew.Option{crew.WithOverflow(crew.CallerRuns), crew.WithMaxWait(time.Millisecond)}},
}

// Keyed: "The pool's WithQueueSize does not bound keyed tasks"; Keyed.Stats: "keyed tasks ...
// never run on their submitter" (CallerRan 0). With the pool's one worker busy and its queue
// of one full, under every overflow policy, Submit, TrySubmit and SubmitContext of a Keyed
// without a bound of its own accept at once, none of the keyed tasks runs on its submitter,
// and each gets one Queued, Started and Finished and no Rejected or Discarded.
func TestAdvKQPoolQueueBoundAndPolicyNeverApplyToKeyedTasks(t *testing.T) {
	for _, pol := range kqPolicies {
		t.Run(pol.name, func(t *testing.T) {
			var h kqHooks
			var plainDropped atomic.Int32
			opts := append([]crew.Option{crew.WithHooks(h.hooks()),
				crew.WithDiscardHandler(func(any) { plainDropped.Add(1) })}, pol.opts...)
			p, free := fullBoundedQueue(t, opts...)
			k := crew.NewKeyed[string](p)
			const n = 12
			l := newKQLedger(n)
			done := goRun(func() {
				for i := range n {
					key := []string{"a", "b", "c"}[i%3]
					f := l.task(i, i%3, i/3, kqReturns)
					l.by[i].Store(kqGID())
					var ok bool
					switch i % 3 {
					case 0:
						ok = k.Submit(key, f) == nil
					case 1:
						ok = k.TrySubmit(key, f)
					case 2:
						ok = k.SubmitContext(context.Background(), key, f) == nil
					}
					l.accepted[i].Store(ok)
					if !ok {
						t.Errorf("keyed submit %d refused on a pool whose own queue is full", i)
					}
				}
			})
			awaitReturn(t, "keyed submits while the pool's queue is full", done)
			if s := k.Stats(); s.Accepted != n || s.Waiting != n || s.Running != 0 {
				t.Errorf("Keyed.Stats before the pool frees a worker: %+v, want %d accepted and waiting", s, n)
			}
			free()
			awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
			awaitReturn(t, "Pool.Wait", goRun(p.Wait))
			tally := l.check(t, pol.name, kqIDs(0, n))
			if tally.ran != n {
				t.Fatalf("%d of %d keyed tasks ran", tally.ran, n)
			}
			for i := range n {
				if l.ranOn[i].Load() == l.by[i].Load() {
					t.Errorf("keyed task %d ran on its submitter", i)
				}
			}
			s := k.Stats()
			idleIdentity(t, "keyed", s)
			if s.Completed != n || s.CallerRan != 0 || s.Rejected != 0 || s.Discarded != 0 {
				t.Errorf("Keyed.Stats %+v, want %d completed and nothing caller-run, rejected or discarded", s, n)
			}
			// The two held plain tasks, plus n keyed tasks.
			if h.queued.Load() != n+2 || h.started.Load() != n+2 || h.finished.Load() != n+2 ||
				h.rejected.Load() != 0 || h.discarded.Load() != 0 {
				t.Errorf("hooks: %v; want Queued, Started and Finished %d each, no Rejected or Discarded", &h, n+2)
			}
			idleIdentity(t, "pool", p.Stats())
		})
	}
}

// NewKeyed: "It panics if p is nil or another option is given: the pool's options decide
// everything else." Every pool option other than WithQueueSize and WithNonBlocking, given
// with a value that changes something, must make NewKeyed panic, rather than be silently
// ignored.
func TestAdvKQNewKeyedPanicsOnEveryPoolOnlyOption(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := map[string]crew.Option{
		"WithOverflow(CallerRuns)":    crew.WithOverflow(crew.CallerRuns),
		"WithOverflow(DiscardOldest)": crew.WithOverflow(crew.DiscardOldest),
		"WithMaxWait":                 crew.WithMaxWait(time.Second),
		"WithMaxBlocked":              crew.WithMaxBlocked(1),
		"WithDiscardHandler":          crew.WithDiscardHandler(func(any) {}),
		"WithRateLimit":               crew.WithRateLimit(10, 1),
		"WithPriority":                crew.WithPriority(1),
		"WithMinWorkers":              crew.WithMinWorkers(1),
		"WithIdleTimeout":             crew.WithIdleTimeout(time.Second),
		"WithPanicHandler":            crew.WithPanicHandler(func(any, []byte) {}),
		"WithContext":                 crew.WithContext(ctx),
		"WithoutPanicRecovery":        crew.WithoutPanicRecovery(),
		"WithHooks":                   crew.WithHooks(crew.Hooks{}),
		"WithLatencyHistograms":       crew.WithLatencyHistograms(),
		"WithTaskTimeout":             crew.WithTaskTimeout(time.Second),
		"WithAdaptiveLimit":           crew.WithAdaptiveLimit(1),
	}
	for name, opt := range opts {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewKeyed(p, %s) did not panic", name)
				}
			}()
			crew.NewKeyed[int](p, opt)
		}()
	}
	for _, ok := range []crew.Option{crew.WithQueueSize(3), crew.WithNonBlocking(), crew.WithOverflow(crew.Reject), nil} {
		crew.NewKeyed[int](p, ok) // must not panic
	}
}

// kqPool is one pool of a storm with a Keyed on it and hooks of its own.
type kqPool struct {
	name  string
	p     *crew.Pool
	k     *crew.Keyed[int]
	h     *kqHooks
	limit int // the highest limit the pool ever has
	lo    int // its first task id
	// Per pool: keys keys of per tasks each (ids lo .. lo+keys*per-1), then plain tasks.
	keyed, plain []int
	submits      atomic.Int64 // submits made, accepted or not
}

// kqLayout gives each pool its ids: keys*per keyed tasks, then plain ones.
func kqLayout(pools []*kqPool, keys, per, plain int) int {
	id := 0
	for _, kp := range pools {
		kp.lo = id
		kp.keyed = kqIDs(id, id+keys*per)
		id += keys * per
		kp.plain = kqIDs(id, id+plain)
		id += plain
	}
	return id
}

// kqSubmitAll submits every pool's tasks: one goroutine per key, submitting its tasks in
// order, and two per pool for its plain tasks. keyed submits a keyed task; nil as error
// means accepted. Keys are numbered across pools, so each is checked once.
func kqSubmitAll(t *testing.T, l *kqLedger, pools []*kqPool, keys, per int,
	keyed func(kp *kqPool, key int, f func()) error, plain func(kp *kqPool, f func()) error) {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for pi, kp := range pools {
		for key := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				gkey := pi*keys + key
				for seq := range per {
					id := kp.lo + key*per + seq
					f := l.task(id, gkey, seq, kqKind(seq))
					l.by[id].Store(kqGID())
					kp.submits.Add(1)
					err := keyed(kp, gkey, f)
					l.accepted[id].Store(err == nil)
				}
			}()
		}
		for half := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i, id := range kp.plain {
					if i%2 != half {
						continue
					}
					f := l.task(id, -1, 0, kqReturns)
					l.by[id].Store(kqGID())
					kp.submits.Add(1)
					l.accepted[id].Store(plain(kp, f) == nil)
				}
			}()
		}
	}
	close(start)
	awaitReturn(t, "the submitters", goRun(wg.Wait))
}

// kqResizeStorm shrinks and grows p between 1 and max until stop is closed.
func kqResizeStorm(wg *sync.WaitGroup, stop <-chan struct{}, p *crew.Pool, max int) {
	n := 0
	repeatUntil(wg, stop, func() {
		n++
		p.Resize(1 + n%max)
		time.Sleep(200 * time.Microsecond)
	})
}

// kqStormSize returns the sizes of a storm: keys per pool, tasks per key, plain tasks per
// pool, rounds.
func kqStormSize() (keys, per, plain, rounds int) {
	if testing.Short() {
		return 3, 30, 40, 1
	}
	return 3, 60, 80, 3
}

// DiscardOldest: "a dropped plain task goes to the discard handler ... Every drop counts in
// Stats.Discarded"; Keyed: a turn that DiscardOldest takes out is Discarded "with the keyed
// tasks it was to run", and Keyed.Stats counts each; Hooks: one Queued, Started, Finished per
// keyed task, Discarded for each dropped one; per key, order and one at a time. On a root pool
// and on two priority sub-pools, each with a bounded queue under DiscardOldest, with keyed
// tasks that call runtime.Goexit or panic(nil), plain tasks that push the oldest out, a pause
// storm and a resize storm: every accepted task runs or is dropped exactly once, the keys keep
// their order among those that ran, Keyed.Stats and the hooks account for each, and every
// Keyed.Stats snapshot accounts for every accepted task once.
func TestAdvKQDiscardOldestOnPrioritySubPoolsKeepsOrderAndAccounts(t *testing.T) {
	keys, per, plain, rounds := kqStormSize()
	for round := range rounds {
		var panics atomic.Int64
		var l *kqLedger // made once the pools are laid out; the handlers read it later
		ph := crew.WithPanicHandler(func(v any, _ []byte) {
			// Under GODEBUG=panicnil=1, recover returns nil for panic(nil).
			if _, ok := v.(*runtime.PanicNilError); !ok && !(v == nil && panicNilValue() == nil) {
				t.Errorf("panic handler got %T %v, want *runtime.PanicNilError", v, v)
			}
			panics.Add(1)
		})
		mk := func(name string, limit int, build func(opts ...crew.Option) *crew.Pool, extra ...crew.Option) *kqPool {
			h := &kqHooks{}
			opts := append([]crew.Option{crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest),
				crew.WithDiscardHandler(func(v any) { l.discard(v) }), crew.WithHooks(h.hooks())}, extra...)
			p := build(opts...)
			return &kqPool{name: name, p: p, k: crew.NewKeyed[int](p), h: h, limit: limit}
		}
		root := mk("root", 3, func(o ...crew.Option) *crew.Pool { return crew.New(3, append(o, ph)...) })
		high := mk("high", 2, func(o ...crew.Option) *crew.Pool { return root.p.Sub(2, o...) }, crew.WithPriority(2))
		low := mk("low", 2, func(o ...crew.Option) *crew.Pool { return root.p.Sub(2, o...) }, crew.WithPriority(0))
		pools := []*kqPool{root, high, low}
		n := kqLayout(pools, keys, per, plain)
		l = newKQLedger(n)

		stop := make(chan struct{})
		var storms sync.WaitGroup
		pauseStorm(&storms, stop, 100*time.Microsecond, root.p, high.p, low.p)
		kqResizeStorm(&storms, stop, root.p, 3)
		var snaps []<-chan error
		for _, kp := range pools {
			snaps = append(snaps, kqSnapshots(kp, keys, stop))
		}
		kqSubmitAll(t, l, pools, keys, per,
			func(kp *kqPool, key int, f func()) error { return kp.k.Submit(key, f) },
			func(kp *kqPool, f func()) error { return kp.p.Submit(f) })
		close(stop)
		awaitReturn(t, "the storms", goRun(storms.Wait))
		root.p.Resume()
		high.p.Resume()
		low.p.Resume()
		root.p.Resize(3)
		for _, kp := range pools {
			kqWaitErr(t, kp.name+" Keyed.Stats snapshots", snaps[0])
			snaps = snaps[1:]
			awaitReturn(t, kp.name+" Keyed.Wait", goRun(kp.k.Wait))
			awaitReturn(t, kp.name+" Pool.Wait", goRun(kp.p.Wait))
		}
		awaitReturn(t, "StopAndWait", goRun(root.p.StopAndWait))
		l.settle(nil)
		var dropped, panicked int
		for _, kp := range pools {
			what := fmt.Sprintf("round %d %s", round, kp.name)
			kt := l.check(t, what+" keyed", kp.keyed)
			pt := l.check(t, what+" plain", kp.plain)
			if kt.accepted != keys*per || pt.accepted != plain {
				t.Fatalf("%s: %d keyed and %d plain accepted, want all %d and %d", what, kt.accepted, pt.accepted, keys*per, plain)
			}
			dropped += kt.dropped + pt.dropped
			panicked += kt.panicked
			s := kp.k.Stats()
			idleIdentity(t, what+" Keyed.Stats", s)
			if s.Accepted != uint64(kt.accepted) || s.Panicked != uint64(kt.panicked) ||
				s.Completed != uint64(kt.ran-kt.panicked) || s.Discarded != uint64(kt.dropped) || s.Returned != 0 {
				t.Fatalf("%s: Keyed.Stats %+v; the tasks: %+v", what, s, kt)
			}
			idleIdentity(t, what+" Pool.Stats", kp.p.Stats())
			h := kp.h
			total := int64(kt.accepted + pt.accepted)
			if h.queued.Load() != kp.submits.Load() || h.rejected.Load() != 0 ||
				h.started.Load() != int64(kt.ran+pt.ran) || h.finished.Load() != h.started.Load() ||
				h.discarded.Load() != int64(kt.dropped+pt.dropped) || h.started.Load()+h.discarded.Load() != total ||
				h.panickedFin.Load() != int64(kt.panicked) {
				t.Fatalf("%s: hooks %v; keyed %+v plain %+v, %d submits", what, h, kt, pt, kp.submits.Load())
			}
		}
		if int(panics.Load()) != panicked {
			t.Fatalf("round %d: the panic handler saw %d panics, %d keyed tasks panicked with nil", round, panics.Load(), panicked)
		}
		if round == 0 {
			t.Logf("dropped %d tasks; root keyed %+v", dropped, root.k.Stats())
		}
	}
}

// CallerRuns: "runs the task on the submitting goroutine"; Keyed.Stats: keyed tasks "never
// run on their submitter" and CallerRan is 0; Hooks: "a task that CallerRuns runs on its
// submitter is seen there", one Queued/Started/Finished per keyed task. On a root pool and
// priority sub-pools, each with a queue of one under CallerRuns, keyed and plain submitters
// race under a pause storm and a resize storm: no keyed task runs on its submitter, keys keep
// their order, every task runs exactly once, and the counts add up, the pools' CallerRan
// counting plain tasks only.
func TestAdvKQCallerRunsNeverRunsAKeyedTaskOnItsSubmitter(t *testing.T) {
	keys, per, plain, rounds := kqStormSize()
	for round := range rounds {
		var panics atomic.Int64
		ph := crew.WithPanicHandler(func(any, []byte) { panics.Add(1) })
		mk := func(name string, limit int, build func(opts ...crew.Option) *crew.Pool, extra ...crew.Option) *kqPool {
			h := &kqHooks{}
			opts := append([]crew.Option{crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns),
				crew.WithHooks(h.hooks())}, extra...)
			p := build(opts...)
			return &kqPool{name: name, p: p, k: crew.NewKeyed[int](p), h: h, limit: limit}
		}
		root := mk("root", 2, func(o ...crew.Option) *crew.Pool { return crew.New(2, append(o, ph)...) })
		high := mk("high", 2, func(o ...crew.Option) *crew.Pool { return root.p.Sub(2, o...) }, crew.WithPriority(3))
		leaf := mk("leaf", 1, func(o ...crew.Option) *crew.Pool { return high.p.Sub(1, o...) }, crew.WithPriority(1))
		pools := []*kqPool{root, high, leaf}
		l := newKQLedger(kqLayout(pools, keys, per, plain))

		stop := make(chan struct{})
		var storms sync.WaitGroup
		pauseStorm(&storms, stop, 100*time.Microsecond, root.p, high.p, leaf.p)
		kqResizeStorm(&storms, stop, root.p, 2)
		var snaps []<-chan error
		for _, kp := range pools {
			snaps = append(snaps, kqSnapshots(kp, keys, stop))
		}
		kqSubmitAll(t, l, pools, keys, per,
			func(kp *kqPool, key int, f func()) error { return kp.k.Submit(key, f) },
			func(kp *kqPool, f func()) error { return kp.p.Submit(f) })
		close(stop)
		awaitReturn(t, "the storms", goRun(storms.Wait))
		for _, kp := range pools {
			kp.p.Resume()
		}
		root.p.Resize(2)
		for i, kp := range pools {
			kqWaitErr(t, kp.name+" Keyed.Stats snapshots", snaps[i])
			awaitReturn(t, kp.name+" Keyed.Wait", goRun(kp.k.Wait))
			awaitReturn(t, kp.name+" Pool.Wait", goRun(kp.p.Wait))
		}
		awaitReturn(t, "StopAndWait", goRun(root.p.StopAndWait))
		var panicked int
		for _, kp := range pools {
			what := fmt.Sprintf("round %d %s", round, kp.name)
			kt := l.check(t, what+" keyed", kp.keyed)
			pt := l.check(t, what+" plain", kp.plain)
			if kt.ran != keys*per || pt.ran != plain {
				t.Fatalf("%s: %d keyed and %d plain ran, want %d and %d", what, kt.ran, pt.ran, keys*per, plain)
			}
			var inline int
			for _, id := range kp.keyed {
				if l.ranOn[id].Load() == l.by[id].Load() {
					t.Fatalf("%s: keyed task %d ran on its submitter", what, id)
				}
			}
			for _, id := range kp.plain {
				if l.ranOn[id].Load() == l.by[id].Load() {
					inline++
				}
			}
			panicked += kt.panicked
			s := kp.k.Stats()
			idleIdentity(t, what+" Keyed.Stats", s)
			if s.Accepted != uint64(keys*per) || s.Panicked != uint64(kt.panicked) || s.CallerRan != 0 {
				t.Fatalf("%s: Keyed.Stats %+v; the tasks: %+v", what, s, kt)
			}
			ps := kp.p.Stats()
			idleIdentity(t, what+" Pool.Stats", ps)
			if ps.CallerRan != uint64(inline) {
				t.Fatalf("%s: Pool.Stats.CallerRan %d, but %d plain tasks ran on their submitters: %+v", what, ps.CallerRan, inline, ps)
			}
			h := kp.h
			if h.queued.Load() != kp.submits.Load() || h.rejected.Load() != 0 || h.discarded.Load() != 0 ||
				h.started.Load() != int64(kt.ran+pt.ran) || h.finished.Load() != h.started.Load() ||
				h.panickedFin.Load() != int64(kt.panicked) {
				t.Fatalf("%s: hooks %v; keyed %+v plain %+v", what, h, kt, pt)
			}
			if round == 0 {
				t.Logf("%s: %d plain tasks ran on their submitters", kp.name, inline)
			}
		}
		if int(panics.Load()) != panicked {
			t.Fatalf("round %d: the panic handler saw %d panics, %d keyed tasks panicked with nil", round, panics.Load(), panicked)
		}
	}
}

// kqStopNowOrder fails t if, for a key, a task ran after one of the key's tasks StopNow handed
// back ("a key whose queued tasks StopNow hands back runs none of its tasks afterwards"), or
// StopNow handed a key's tasks back out of their order ("in the order they would have
// started").
func kqStopNowOrder(t *testing.T, what string, l *kqLedger, ids []int) {
	t.Helper()
	in := make(map[int]bool, len(ids))
	maxRan := map[int]int{}
	for _, id := range ids {
		in[id] = true
		if l.ran[id].Load() == 1 {
			maxRan[l.key[id]] = max(maxRan[l.key[id]], l.seq[id]+1)
		}
	}
	lastRet := map[int]int{}
	for _, id := range l.retOrder {
		if !in[id] || l.key[id] < 0 {
			continue
		}
		key, seq := l.key[id], l.seq[id]
		if seq < maxRan[key] {
			t.Fatalf("%s: key %d: task %d was handed back by StopNow, but task %d of the key ran", what, key, seq, maxRan[key]-1)
		}
		if prev, ok := lastRet[key]; ok && seq < prev {
			t.Fatalf("%s: key %d: StopNow handed back task %d after task %d", what, key, seq, prev)
		}
		lastRet[key] = seq
	}
}

// StopNow: "Every accepted task either runs exactly once or is returned (or failed) by
// StopNow, never both, and counts in Stats.Returned if it is"; "a submitter blocked on a full
// queue when StopNow is called returns ErrStopped"; Keyed "keeps its order through StopNow";
// Keyed.Stats counts Returned; Hooks: Rejected for each refused submit, Started/Finished for
// each task that ran, Discarded for each dropped. Keyed and plain submitters hammer a root
// pool and two priority sub-pools (bounded queues under the policy of the subtest; the Keyeds
// bounded and blocking, unbounded, and bounded and non-blocking) under a pause storm, and
// StopNow of the root lands in the middle: every submit either was refused or its task ran,
// was dropped or was handed back exactly once; no Wait hangs; the counts and hooks add up.
func TestAdvKQConcurrentSubmitsWithStopNowInTheMiddle(t *testing.T) {
	policies := []struct {
		name string
		opt  crew.Option
	}{
		{"Block", crew.WithOverflow(crew.Block)},
		{"NonBlocking", crew.WithNonBlocking()},
		{"CallerRuns", crew.WithOverflow(crew.CallerRuns)},
		{"DiscardOldest", crew.WithOverflow(crew.DiscardOldest)},
	}
	keys, per, plain, rounds := kqStormSize()
	for _, pol := range policies {
		for _, ofSub := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/StopNowOfSubPool=%v", pol.name, ofSub), func(t *testing.T) {
				for round := range rounds {
					kqStopNowRound(t, pol.opt, keys, per, plain, round, ofSub)
				}
			})
		}
	}
}

// kqStopNowRound is one round of TestAdvKQConcurrentSubmitsWithStopNowInTheMiddle: StopNow of
// the root, or with ofSub of its sub-pool "high" (and so of "leaf" below it), while the root
// goes on.
func kqStopNowRound(t *testing.T, policy crew.Option, keys, per, plain, round int, ofSub bool) {
	var l *kqLedger // made once the pools are laid out; the handlers read it later
	mk := func(name string, limit int, build func(opts ...crew.Option) *crew.Pool, queue int, kopts ...crew.Option) *kqPool {
		h := &kqHooks{}
		opts := []crew.Option{crew.WithQueueSize(queue), policy,
			crew.WithDiscardHandler(func(v any) { l.discard(v) }), crew.WithHooks(h.hooks())}
		p := build(opts...)
		return &kqPool{name: name, p: p, k: crew.NewKeyed[int](p, kopts...), h: h, limit: limit}
	}
	quiet := crew.WithPanicHandler(func(any, []byte) {})
	root := mk("root", 2, func(o ...crew.Option) *crew.Pool { return crew.New(2, append(o, quiet)...) }, 2, crew.WithQueueSize(4))
	high := mk("high", 2, func(o ...crew.Option) *crew.Pool {
		return root.p.Sub(2, append(o, crew.WithPriority(2))...)
	}, 1)
	leaf := mk("leaf", 1, func(o ...crew.Option) *crew.Pool { return high.p.Sub(1, o...) }, 2,
		crew.WithQueueSize(2), crew.WithNonBlocking())
	pools := []*kqPool{root, high, leaf}
	l = newKQLedger(kqLayout(pools, keys, per, plain))

	stop := make(chan struct{})
	var storms sync.WaitGroup
	pauseStorm(&storms, stop, 100*time.Microsecond, root.p, high.p, leaf.p)
	kqResizeStorm(&storms, stop, root.p, 2)
	kqResizeStorm(&storms, stop, high.p, 2)
	var snaps []<-chan error
	for _, kp := range pools {
		snaps = append(snaps, kqSnapshots(kp, keys, stop))
	}
	var returned []func()
	stopped := make(chan struct{})
	submitted := make(chan struct{})
	go func() {
		defer close(stopped)
		// StopNow once a fifth of the tasks have run (or the submitters are done).
		fifth := int64(len(pools) * (keys*per + plain) / 5)
		for l.runs.Load() < fifth {
			select {
			case <-submitted:
			case <-time.After(50 * time.Microsecond):
				continue
			}
			break
		}
		if ofSub {
			returned = high.p.StopNow()
		} else {
			returned = root.p.StopNow()
		}
	}()
	kqSubmitAll(t, l, pools, keys, per,
		func(kp *kqPool, key int, f func()) error {
			switch kp {
			case root:
				return kp.k.Submit(key, f)
			case high:
				return kp.k.SubmitContext(context.Background(), key, f)
			}
			if !kp.k.TrySubmit(key, f) {
				return crew.ErrQueueFull
			}
			return nil
		},
		func(kp *kqPool, f func()) error { return kp.p.Submit(f) })
	close(submitted)
	awaitReturn(t, "StopNow", stopped)
	close(stop)
	awaitReturn(t, "the storms", goRun(storms.Wait))
	awaitReturn(t, "StopAndWait", goRun(root.p.StopAndWait))
	for i, kp := range pools {
		kqWaitErr(t, kp.name+" Keyed.Stats snapshots", snaps[i])
		awaitReturn(t, kp.name+" Keyed.Wait", goRun(kp.k.Wait))
		awaitReturn(t, kp.name+" Pool.Wait", goRun(kp.p.Wait))
	}
	l.settle(returned)
	var totalRet int
	for _, kp := range pools {
		what := fmt.Sprintf("round %d %s", round, kp.name)
		kt := l.check(t, what+" keyed", kp.keyed)
		pt := l.check(t, what+" plain", kp.plain)
		kqStopNowOrder(t, what, l, kp.keyed)
		totalRet += kt.returned + pt.returned
		s := kp.k.Stats()
		idleIdentity(t, what+" Keyed.Stats", s)
		if s.Accepted != uint64(kt.accepted) || s.Panicked != uint64(kt.panicked) || s.Returned != uint64(kt.returned) ||
			s.Discarded != uint64(kt.dropped) || s.Completed != uint64(kt.ran-kt.panicked) {
			t.Fatalf("%s: Keyed.Stats %+v; the keyed tasks: %+v", what, s, kt)
		}
		idleIdentity(t, what+" Pool.Stats", kp.p.Stats())
		h := kp.h
		refused := kp.submits.Load() - int64(kt.accepted+pt.accepted)
		if h.queued.Load() != kp.submits.Load() || h.rejected.Load() != refused ||
			h.started.Load() != int64(kt.ran+pt.ran) || h.finished.Load() != h.started.Load() ||
			h.discarded.Load() != int64(kt.dropped+pt.dropped) || h.panickedFin.Load() != int64(kt.panicked) {
			t.Fatalf("%s: hooks %v; %d submits, %d refused; keyed %+v plain %+v", what, h, kp.submits.Load(), refused, kt, pt)
		}
		if round == 0 {
			t.Logf("%s: keyed %+v plain %+v", kp.name, kt, pt)
		}
	}
	if totalRet != len(returned) {
		t.Fatalf("StopNow returned %d functions, %d of them tasks of the storm", len(returned), totalRet)
	}
}

// Shutdown: "like http.Server.Shutdown: ctx.Err() if ctx ends first"; "Plain tasks still run
// (they cannot be told)"; "Stop, StopAndWait and Shutdown resume"; Keyed: the pool's Shutdown
// waits for accepted keyed tasks. Keyed tasks are plain tasks: a Shutdown whose context ends
// while keys are held, one of them on a paused sub-pool of a sub-pool with a bounded queue
// under DiscardOldest, returns ctx.Err(), refuses later keyed submits with ErrStopped (one
// Queued and one Rejected each), and every keyed task accepted before it still runs, in
// order, none skipped, returned or discarded; a second Shutdown then returns nil.
func TestAdvKQShutdownWithAnEndingContextStillRunsEveryKeyedTask(t *testing.T) {
	var rh, lh kqHooks
	root := crew.New(2, crew.WithQueueSize(1), crew.WithHooks(rh.hooks()), crew.WithPanicHandler(func(any, []byte) {}))
	mid := root.Sub(2, crew.WithPriority(1), crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest))
	leaf := mid.Sub(1, crew.WithHooks(lh.hooks()))
	kr, kl := crew.NewKeyed[int](root), crew.NewKeyed[int](leaf, crew.WithQueueSize(64))
	const per = 20
	l := newKQLedger(2 * (per + 1))
	gate := make(chan struct{})
	held := make(chan struct{}, 2)
	hold := func() { held <- struct{}{}; <-gate }
	for i, k := range []*crew.Keyed[int]{kr, kl} {
		must(t, k.Submit(i, hold))
		for seq := range per {
			id := i*(per+1) + seq
			l.accepted[id].Store(true)
			must(t, k.Submit(i, l.task(id, i, seq+1, kqKind(seq))))
		}
	}
	for range 2 {
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			t.Fatal("the keys' first tasks did not start")
		}
	}
	mid.Pause()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	var err error
	awaitReturn(t, "Shutdown with an ending context", goRun(func() { err = root.Shutdown(ctx) }))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v with keyed tasks held, want context.DeadlineExceeded", err)
	}
	for i, k := range []*crew.Keyed[int]{kr, kl} {
		if err := k.Submit(i, func() { t.Error("a keyed task refused after Shutdown ran") }); !errors.Is(err, crew.ErrStopped) {
			t.Errorf("keyed Submit after Shutdown = %v, want ErrStopped", err)
		}
		if k.TrySubmit(i+10, func() { t.Error("a keyed task refused after Shutdown ran") }) {
			t.Error("keyed TrySubmit after Shutdown = true")
		}
	}
	close(gate)
	awaitReturn(t, "root Keyed.Wait", goRun(kr.Wait))
	awaitReturn(t, "leaf Keyed.Wait", goRun(kl.Wait))
	awaitReturn(t, "a second Shutdown", goRun(func() { err = root.Shutdown(context.Background()) }))
	if err != nil {
		t.Fatalf("second Shutdown = %v", err)
	}
	tally := l.check(t, "after Shutdown", kqIDs(0, 2*(per+1)))
	if tally.ran != 2*per {
		t.Fatalf("%d of %d keyed tasks ran after a Shutdown whose context ended: %+v", tally.ran, 2*per, tally)
	}
	for name, k := range map[string]*crew.Keyed[int]{"root": kr, "leaf": kl} {
		s := k.Stats()
		idleIdentity(t, name+" Keyed.Stats", s)
		if s.Accepted != per+1 || s.Completed+s.Panicked != per+1 || s.Skipped+s.Returned+s.Discarded != 0 {
			t.Errorf("%s Keyed.Stats %+v, want %d accepted, all ended", name, s, per+1)
		}
	}
	for name, h := range map[string]*kqHooks{"root": &rh, "leaf": &lh} {
		if h.queued.Load() != per+3 || h.started.Load() != per+1 || h.finished.Load() != per+1 ||
			h.rejected.Load() != 2 || h.stopped.Load() != 2 {
			t.Errorf("%s hooks: %v; want Queued %d, Started and Finished %d, Rejected 2 (ErrStopped)", name, h, per+3, per+1)
		}
	}
}

// kqDeepKey builds root <- mid (WithPriority(1)) <- leaf, a Keyed on leaf, and starts key 0's
// first task, which holds until release; then later keyed tasks of key 0, which record their
// start in order.
func kqDeepKey(t *testing.T, rootLimit int) (root, mid, leaf *crew.Pool, k *crew.Keyed[int], release func(), order func() []string, rec func(string)) {
	t.Helper()
	root = crew.New(rootLimit)
	mid = root.Sub(2, crew.WithPriority(1), crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	leaf = mid.Sub(2, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest))
	k = crew.NewKeyed[int](leaf, crew.WithQueueSize(8))
	var mu sync.Mutex
	var got []string
	rec = func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() }
	order = func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }
	gate := make(chan struct{})
	first := make(chan struct{})
	must(t, k.Submit(0, func() { rec("k0"); close(first); <-gate }))
	for i := 1; i <= 3; i++ {
		must(t, k.Submit(0, func() { rec(fmt.Sprintf("k%d", i)) }))
	}
	awaitReturn(t, "key 0's first task", first)
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(func() {
		release()
		root.StopAndWait()
	})
	return
}

// Pause: "a parent's Pause holds its sub-pools' starts"; Keyed: a turn goes on only "if the
// pool would start a task then (not after Pool.Pause has returned ...)". A key on a sub-pool
// of a sub-pool (bounded queues under CallerRuns and DiscardOldest) whose turn runs when the
// root is paused starts none of its next tasks until Resume; Keyed.Stats shows them Waiting
// and the root's Paused.
func TestAdvKQRootPauseHoldsAKeyTwoSubPoolsDown(t *testing.T) {
	root, _, _, k, release, order, _ := kqDeepKey(t, 2)
	root.Pause()
	release()
	awaitStats(t, k, "key 0's first task to end", func(s crew.Stats) bool { return s.Completed == 1 && s.Running == 0 })
	time.Sleep(50 * time.Millisecond)
	if got := order(); len(got) != 1 {
		t.Fatalf("keyed tasks started %v, %d of them after the root's Pause returned", got, len(got)-1)
	}
	if s := k.Stats(); s.Waiting != 3 || s.Running != 0 || s.Completed != 1 {
		t.Errorf("Keyed.Stats while the root is paused: %+v, want 3 waiting, 1 completed", s)
	}
	root.Resume()
	awaitReturn(t, "Keyed.Wait after Resume", goRun(k.Wait))
	if got := fmt.Sprint(order()); got != "[k0 k1 k2 k3]" {
		t.Errorf("start order %s", got)
	}
}

// Resize: "after a parent's shrinking Resize returns, no task of any sub-pool starts while the
// parent runs its new limit or more". A key's turn on a sub-pool of a sub-pool, beside a plain
// task of the root: after root.Resize(1), the key's next task must wait for the plain task.
func TestAdvKQRootShrinkHoldsAKeyTwoSubPoolsDown(t *testing.T) {
	root, _, _, k, release, order, rec := kqDeepKey(t, 2)
	plainGate := make(chan struct{})
	plainIn := make(chan struct{})
	must(t, root.Submit(func() { close(plainIn); <-plainGate; rec("plain") }))
	awaitReturn(t, "the root's plain task", plainIn)
	root.Resize(1)
	release()
	time.Sleep(50 * time.Millisecond)
	if got := order(); len(got) != 1 {
		t.Fatalf("keyed tasks started %v while the root, resized to 1, ran its plain task", got)
	}
	close(plainGate)
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	if got := fmt.Sprint(order()); got != "[k0 plain k1 k2 k3]" {
		t.Errorf("order %s, want the key's later tasks after the plain task", got)
	}
	if s := k.Stats(); s.MaxWorkers != 2 {
		t.Errorf("Keyed.Stats.MaxWorkers %d, want the leaf's own limit 2", s.MaxWorkers)
	}
}

// WithPriority: "a worker never takes a lower-level task while a higher-level one that may
// start waits", "also after Resume". A key's turn on a sub-pool of a level-1 sub-pool, on a
// root of one worker: a task of a level-5 sibling queued while the turn runs starts before the
// key's next task, also when the root was paused and resumed meanwhile.
func TestAdvKQHigherLevelOvertakesAKeyTwoSubPoolsDown(t *testing.T) {
	for _, pause := range []bool{false, true} {
		t.Run(fmt.Sprintf("pause=%v", pause), func(t *testing.T) {
			root, _, _, k, release, order, rec := kqDeepKey(t, 1)
			high := root.Sub(1, crew.WithPriority(5), crew.WithQueueSize(1))
			if pause {
				root.Pause()
			}
			must(t, high.Submit(func() { rec("HIGH") }))
			release()
			if pause {
				awaitStats(t, k, "key 0's first task to end", func(s crew.Stats) bool { return s.Completed == 1 && s.Running == 0 })
				root.Resume()
			}
			awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
			awaitReturn(t, "high.Wait", goRun(high.Wait))
			if got := fmt.Sprint(order()); got != "[k0 HIGH k1 k2 k3]" {
				t.Errorf("start order %s: a keyed task of level 1 started while a level-5 task waited", got)
			}
		})
	}
}

// Hooks: "a Discarded hook comes after the dropped task went to the discard handler or failed
// with ErrDiscarded"; DiscardOldest: "Nothing is dropped silently", a dropped plain task goes
// to the discard handler. A key's turn that DiscardOldest drops takes its keyed tasks with it:
// each must reach the discard handler before its Discarded hook is called, so that a
// Discarded hook that calls runtime.Goexit (ending the submitter that caused the drop) does
// not keep the dropped keyed tasks from the handler.
func TestAdvKQDiscardedHookComesAfterTheHandlerForKeyedTasks(t *testing.T) {
	for _, goexit := range []bool{false, true} {
		t.Run(fmt.Sprintf("goexit=%v", goexit), func(t *testing.T) { kqDiscardOrder(t, true, goexit) })
	}
}

// The same for a plain task, the reference the keyed case is held to.
func TestAdvKQDiscardedHookComesAfterTheHandlerForPlainTasks(t *testing.T) {
	for _, goexit := range []bool{false, true} {
		t.Run(fmt.Sprintf("goexit=%v", goexit), func(t *testing.T) { kqDiscardOrder(t, false, goexit) })
	}
}

// kqDiscardOrder drops the oldest queued task of a pool of one worker and a queue of one
// under DiscardOldest, the turn of a key holding two keyed tasks if keyed is set, a plain
// task if not, and checks that each dropped task reached the discard handler before its
// Discarded hook, which calls runtime.Goexit if goexit is set.
func kqDiscardOrder(t *testing.T, keyed, goexit bool) {
	var mu sync.Mutex
	var events []string
	ev := func(s string) { mu.Lock(); events = append(events, s); mu.Unlock() }
	var handled atomic.Int32
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(any) { handled.Add(1); ev("handler") }),
		crew.WithHooks(crew.Hooks{Discarded: func(crew.TaskInfo) {
			ev("hook")
			if goexit {
				runtime.Goexit()
			}
		}}))
	defer p.StopAndWait()
	release := holdWorkers(t, plainPool{p}, 1, 0)
	k := crew.NewKeyed[int](p)
	never := func() { t.Error("a dropped task ran") }
	dropping := 1
	if keyed {
		dropping = 2
		must(t, k.Submit(7, never)) // the key's turn takes the queue's one place
		must(t, k.Submit(7, never))
	} else {
		must(t, p.Submit(never))
	}
	var err error
	awaitReturn(t, "the submit that drops the oldest", goRun(func() { err = p.Submit(func() {}) }))
	if err != nil {
		t.Fatalf("Submit under DiscardOldest = %v", err)
	}
	release()
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	awaitReturn(t, "Pool.Wait", goRun(p.Wait))
	mu.Lock()
	got := fmt.Sprint(events)
	mu.Unlock()
	if int(handled.Load()) != dropping {
		t.Fatalf("the discard handler got %d of the %d dropped tasks; events %s", handled.Load(), dropping, got)
	}
	// Every dropped task reaches the handler before the first hook, so a hook's Goexit ends
	// only the hooks after it.
	want := "[handler hook]"
	switch {
	case keyed && goexit:
		want = "[handler handler hook]"
	case keyed:
		want = "[handler handler hook hook]"
	}
	if got != want {
		t.Fatalf("events %s, want %s: a Discarded hook came before the dropped task reached the handler", got, want)
	}
	if s := k.Stats(); keyed && s.Discarded != 2 {
		t.Errorf("Keyed.Stats %+v, want 2 discarded", s)
	}
}

// StopNow: "It includes the tasks of the pool's sub-pools ... after the pool's own", "in the
// order they would have started", "Stopping a sub-pool leaves the parent and its siblings
// working"; Keyed.Stats counts Returned. A sub-pool's StopNow takes its keys' tasks out both
// from its own queue and from inside its worker waiting in the busy root's queue: it hands
// them back key by key in submit order, none runs, Keyed.Stats and the hooks account for
// them, and the root still accepts and runs tasks.
func TestAdvKQSubPoolStopNowHandsBackKeysWaitingInTheRootsQueue(t *testing.T) {
	var h kqHooks
	root := crew.New(1, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest))
	defer root.StopAndWait()
	release := holdWorkers(t, plainPool{root}, 1, 0)
	sub := root.Sub(1, crew.WithPriority(1), crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithHooks(h.hooks()))
	k := crew.NewKeyed[int](sub, crew.WithQueueSize(16))
	l := newKQLedger(8)
	for id := range 8 {
		key, seq := 0, id
		if id >= 5 {
			key, seq = 1, id-5
		}
		l.accepted[id].Store(true)
		must(t, k.Submit(key, l.task(id, key, seq, kqReturns)))
	}
	if s := root.Stats(); s.Waiting != 1 {
		t.Fatalf("root Stats %+v: want the sub-pool's worker waiting in its queue", s)
	}
	got := sub.StopNow()
	if len(got) != 8 {
		t.Fatalf("the sub-pool's StopNow handed back %d tasks, want the 8 keyed ones", len(got))
	}
	if err := k.Submit(0, func() { t.Error("a refused keyed task ran") }); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("keyed Submit after the sub-pool's StopNow = %v", err)
	}
	ran := make(chan struct{})
	must(t, root.Submit(func() { close(ran) }))
	release()
	awaitReturn(t, "the root's task after its sub-pool's StopNow", ran)
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	awaitReturn(t, "sub.Wait", goRun(sub.Wait))
	l.settle(got)
	tally := l.check(t, "sub-pool StopNow", kqIDs(0, 8))
	if tally.returned != 8 {
		t.Fatalf("tasks: %+v, want 8 handed back", tally)
	}
	if fmt.Sprint(l.retOrder) != "[0 1 2 3 4 5 6 7]" {
		t.Errorf("StopNow handed the keyed tasks back in the order %v (ids: key 0 is 0-4, key 1 is 5-7)", l.retOrder)
	}
	s := k.Stats()
	idleIdentity(t, "Keyed.Stats", s)
	if s.Returned != 8 || s.Accepted != 8 {
		t.Errorf("Keyed.Stats %+v, want 8 returned", s)
	}
	idleIdentity(t, "sub Pool.Stats", sub.Stats())
	if h.queued.Load() != 9 || h.started.Load() != 0 || h.rejected.Load() != 1 || h.discarded.Load() != 0 {
		t.Errorf("sub-pool hooks %v, want 9 Queued, 1 Rejected, nothing started or discarded", &h)
	}
}

// StopNow: "A key whose turn was running when StopNow was called may run the tasks it had
// waiting after StopNow returns, as they were never in the pool's queue"; with "every
// accepted task either runs exactly once or is returned". A key whose turn runs, with a
// backlog longer than a turn takes, on a pool with a bounded queue, when StopNow is called:
// whatever StopNow hands back, each of the key's tasks runs or is handed back exactly once,
// in order, the ones handed back after every one that ran, and Keyed.Wait and StopAndWait
// return.
func TestAdvKQStopNowDuringALongTurn(t *testing.T) {
	for _, pol := range kqPolicies {
		t.Run(pol.name, func(t *testing.T) {
			p := crew.New(2, append([]crew.Option{crew.WithQueueSize(1), crew.WithPanicHandler(func(any, []byte) {})}, pol.opts...)...)
			k := crew.NewKeyed[int](p)
			const n = 40
			l := newKQLedger(n + 1)
			gate := make(chan struct{})
			first := make(chan struct{})
			l.accepted[0].Store(true)
			must(t, k.Submit(0, func() { close(first); <-gate; l.task(0, 0, 0, kqReturns)() }))
			for id := 1; id <= n; id++ {
				l.accepted[id].Store(true)
				must(t, k.Submit(0, l.task(id, 0, id, kqKind(id))))
			}
			awaitReturn(t, "the key's first task", first)
			var got []func()
			stopped := goRun(func() { got = p.StopNow() })
			close(gate)
			awaitReturn(t, "StopNow", stopped)
			awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
			awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
			l.settle(got)
			tally := l.check(t, pol.name, kqIDs(0, n+1))
			kqStopNowOrder(t, pol.name, l, kqIDs(0, n+1))
			s := k.Stats()
			idleIdentity(t, "Keyed.Stats", s)
			if s.Returned != uint64(tally.returned) || s.Completed+s.Panicked != uint64(tally.ran) {
				t.Errorf("Keyed.Stats %+v; tasks %+v", s, tally)
			}
		})
	}
}

// NewKeyed: "with WithQueueSize(n), n accepted tasks may wait ... and the next submit blocks
// until one starts, or returns ErrQueueFull under WithNonBlocking"; Keyed.Submit "blocks only
// while the Keyed's bounded queue is full"; Keyed.SubmitContext "gives up waiting ... when ctx
// ends"; Keyed.Stats counts Rejected and Canceled; Hooks: Rejected follows Queued for each
// refusal. The pool's overflow policy must not leak into the Keyed's own bound: under every
// policy, a Keyed submit that finds the Keyed's queue full blocks (it never runs its task on
// the caller nor drops a waiting keyed task), TrySubmit returns false and SubmitContext
// returns its context's error; once room is made the blocked submit is accepted, and every
// accepted task runs in order on a worker.
func TestAdvKQKeyedBoundIsTheKeyedsOwnUnderEveryPoolPolicy(t *testing.T) {
	for _, pol := range kqPolicies {
		t.Run(pol.name, func(t *testing.T) {
			var h kqHooks
			opts := append([]crew.Option{crew.WithHooks(h.hooks()), crew.WithDiscardHandler(func(any) {
				t.Error("the discard handler got a task")
			})}, pol.opts...)
			p, free := fullBoundedQueue(t, opts...)
			k := crew.NewKeyed[int](p, crew.WithQueueSize(2))
			l := newKQLedger(6)
			sub := func(id, key int) func() {
				l.accepted[id].Store(true)
				l.by[id].Store(kqGID())
				return l.task(id, key, id, kqReturns)
			}
			must(t, k.Submit(0, sub(0, 0)))
			must(t, k.Submit(1, sub(1, 1)))
			var blockedErr error
			blocked := goRun(func() { blockedErr = k.Submit(0, sub(2, 0)) })
			stillBlocked(t, "a keyed Submit on the Keyed's full queue", blocked)
			if k.TrySubmit(0, l.task(3, 0, 3, kqReturns)) {
				t.Fatal("keyed TrySubmit on the Keyed's full queue = true")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			err := returnsWithin(t, "SubmitContext with an ending ctx", func() error {
				return k.SubmitContext(ctx, 1, l.task(4, 1, 4, kqReturns))
			})
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("keyed SubmitContext on the Keyed's full queue = %v, want DeadlineExceeded", err)
			}
			if s := k.Stats(); s.Accepted != 2 || s.Waiting != 2 || s.Rejected != 1 || s.Canceled != 1 {
				t.Fatalf("Keyed.Stats %+v, want 2 accepted and waiting, 1 rejected, 1 canceled", s)
			}
			free()
			awaitReturn(t, "the blocked keyed Submit", blocked)
			if blockedErr != nil {
				t.Fatalf("the blocked keyed Submit = %v once room was made", blockedErr)
			}
			awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
			awaitReturn(t, "Pool.Wait", goRun(p.Wait))
			tally := l.check(t, pol.name, kqIDs(0, 5))
			if tally.ran != 3 {
				t.Fatalf("%d keyed tasks ran, want 3", tally.ran)
			}
			for _, id := range []int{0, 1, 2} {
				if l.ranOn[id].Load() == l.by[id].Load() {
					t.Errorf("keyed task %d ran on its submitter", id)
				}
			}
			s := k.Stats()
			idleIdentity(t, "Keyed.Stats", s)
			if s.Completed != 3 || s.Rejected != 1 || s.Canceled != 1 || s.Discarded != 0 || s.CallerRan != 0 {
				t.Errorf("Keyed.Stats %+v", s)
			}
			// Two held plain tasks and five keyed submits; two of these refused.
			if h.queued.Load() != 7 || h.rejected.Load() != 2 || h.full.Load() != 1 || h.canceled.Load() != 1 ||
				h.started.Load() != 5 || h.finished.Load() != 5 || h.discarded.Load() != 0 {
				t.Errorf("hooks %v", &h)
			}
		})
	}
}

// DiscardOldest: "accepts the task and drops the one that has waited longest ... A sub-pool's
// worker waiting in its parent's queue is never dropped: when it is the oldest, the submit
// waits for room as under Block." A key's turn waits in a full root queue, and after it a
// worker of a sub-pool of a higher level (WithPriority): the turn has waited longest and may
// be dropped, so a submit under DiscardOldest must drop it (its keyed task to the discard
// handler) and return, not wait for room because the sub-pool's worker heads the queue.
func TestAdvKQDiscardOldestDropsTheOldestTurnBehindAHigherLevelWorker(t *testing.T) {
	var dropped atomic.Int32
	p := crew.New(1, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(any) { dropped.Add(1) }))
	release := holdWorkers(t, plainPool{p}, 1, 0)
	defer p.StopAndWait()
	defer release()
	high := p.Sub(1, crew.WithPriority(5))
	k := crew.NewKeyed[int](p)
	must(t, k.Submit(1, func() {})) // the oldest: the key's turn
	must(t, high.Submit(func() {})) // then the sub-pool's worker
	if s := p.Stats(); s.Waiting != 2 {
		t.Fatalf("root Stats %+v, want its queue of 2 full", s)
	}
	var err error
	done := goRun(func() { err = p.Submit(func() {}) })
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		release()
		<-done
		t.Fatalf("Submit under DiscardOldest waited for room although the oldest queued task was a key's turn, not a sub-pool's worker; keyed %+v", k.Stats())
	}
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	if s := k.Stats(); s.Discarded != 1 || dropped.Load() != 1 {
		t.Errorf("Keyed.Stats %+v, discard handler got %d: want the key's task dropped", s, dropped.Load())
	}
}

// "No task starts after Pause returns; Stop, StopAndWait and Shutdown resume (exactly once
// holds)"; Keyed: "The pool's Pool.Wait, Pool.StopAndWait and Pool.Shutdown wait for accepted
// keyed tasks too". Keys with backlogs on a root and on sub-pools of two levels (bounded
// queues under CallerRuns and DiscardOldest), every one of them paused, one key's turn
// running: the root's StopAndWait (or Shutdown) resumes them all, runs every keyed task once
// in order, and returns only after the last.
func TestAdvKQStopOfAPausedTreeRunsEveryKeyedTask(t *testing.T) {
	for _, how := range []string{"StopAndWait", "Shutdown"} {
		t.Run(how, func(t *testing.T) {
			root := crew.New(2, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithPanicHandler(func(any, []byte) {}))
			mid := root.Sub(2, crew.WithPriority(2), crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest))
			leaf := mid.Sub(1, crew.WithPriority(1), crew.WithQueueSize(1))
			pools := []*crew.Pool{root, mid, leaf}
			const per = 12
			l := newKQLedger(3 * per)
			var ks []*crew.Keyed[int]
			gate := make(chan struct{})
			first := make(chan struct{})
			for i, p := range pools {
				k := crew.NewKeyed[int](p)
				ks = append(ks, k)
				for seq := range per {
					id := i*per + seq
					l.accepted[id].Store(true)
					f := l.task(id, i, seq, kqKind(seq))
					if i == 2 && seq == 0 {
						inner := f
						f = func() { close(first); <-gate; inner() }
					}
					must(t, k.Submit(i, f))
				}
			}
			awaitReturn(t, "the leaf key's first task", first)
			for _, p := range pools {
				p.Pause()
			}
			close(gate)
			var last atomic.Int64
			stopped := goRun(func() {
				if how == "Shutdown" {
					must(t, root.Shutdown(context.Background()))
				} else {
					root.StopAndWait()
				}
				last.Store(l.runs.Load())
			})
			awaitReturn(t, how+" of a paused tree", stopped)
			tally := l.check(t, how, kqIDs(0, 3*per))
			if tally.ran != 3*per || last.Load() != int64(3*per) {
				t.Fatalf("%s returned after %d keyed tasks ran; %d ran in all, want %d", how, last.Load(), tally.ran, 3*per)
			}
			for i, k := range ks {
				awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
				s := k.Stats()
				idleIdentity(t, "Keyed.Stats", s)
				if s.Completed+s.Panicked != per {
					t.Errorf("pool %d: Keyed.Stats %+v", i, s)
				}
			}
		})
	}
}

// Keyed: "a turn goes on to the key's next task only if the pool would start a task then";
// weighted tasks: "starts stay FIFO, so a heavy task at the head is not overtaken". With one
// of two slots held by a plain task, a key's turn running, and a task of weight 2 queued
// (it waits for both slots), a keyed task submitted after the heavy one must not start
// before it, as a plain task submitted after it does not (the reference subtest).
func TestAdvKQTurnDoesNotOvertakeAHeavyTaskAtTheHead(t *testing.T) {
	t.Run("plain", func(t *testing.T) {
		if got := kqHeavyHeadOrder(t, false); got != "[a1 P H a2]" {
			t.Fatalf("order %s, want [a1 P H a2]", got)
		}
	})
	t.Run("keyed", func(t *testing.T) {
		if got := kqHeavyHeadOrder(t, true); got != "[a1 P H a2]" {
			t.Fatalf("order %s, want [a1 P H a2]: the keyed task overtook the heavy task at the head", got)
		}
	})
}

// kqHeavyHeadOrder returns the order in which tasks end on New(2): P (plain, held), a1 (held;
// keyed on key 0 if keyed), then H (SubmitN(2)) submitted, then a2 (keyed on key 0 if keyed);
// a1 is released first, and P 50 ms after a1 has ended.
func kqHeavyHeadOrder(t *testing.T, keyed bool) string {
	p := crew.New(2)
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	var mu sync.Mutex
	var order []string
	rec := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	submit := func(f func()) {
		if keyed {
			must(t, k.Submit(0, f))
		} else {
			must(t, p.Submit(f))
		}
	}
	pgate, pin := make(chan struct{}), make(chan struct{})
	must(t, p.Submit(func() { close(pin); <-pgate; rec("P") }))
	awaitReturn(t, "the plain task P", pin)
	agate, ain := make(chan struct{}), make(chan struct{})
	submit(func() { close(ain); <-agate; rec("a1") })
	awaitReturn(t, "task a1", ain)
	must(t, p.SubmitN(2, func() { rec("H") }))
	submit(func() { rec("a2") })
	close(agate)
	waitFor(t, "a1 to end", func() bool { mu.Lock(); defer mu.Unlock(); return len(order) > 0 })
	time.Sleep(50 * time.Millisecond) // room for a2 to start, wrongly, before H
	close(pgate)
	awaitReturn(t, "Pool.Wait", goRun(p.Wait))
	mu.Lock()
	defer mu.Unlock()
	return fmt.Sprint(order)
}

// CPUs: "The pool reads GOMAXPROCS when it is made or resized, and again at most once a second
// while tasks are being submitted or Pool.Stats is called"; a keyed task is a task of the pool.
// A pool of CPUs fed only through a Keyed, with keys held running at the old GOMAXPROCS and
// more keys submitted while GOMAXPROCS has grown, must start a third key within a few seconds
// of submitting. Keyed.Stats is read, not Pool.Stats, which reads GOMAXPROCS itself. It sets
// GOMAXPROCS, so it does not run in parallel.
func TestAdvKQKeyedSubmitsKeepACPUsPoolFollowingGOMAXPROCS(t *testing.T) {
	setProcs(t, 2)
	p := crew.New(crew.CPUs)
	k := crew.NewKeyed[int](p)
	release := make(chan struct{})
	var hw highWater
	held := func() { hw.enter(); <-release; hw.exit() }
	defer func() {
		close(release)
		k.Wait()
		p.StopAndWait()
	}()
	for key := range 4 {
		must(t, k.Submit(key, held))
	}
	waitFor(t, "two keys running", func() bool { return hw.running.Load() == 2 })
	runtime.GOMAXPROCS(3)
	deadline := time.Now().Add(4 * time.Second)
	for key := 4; hw.running.Load() < 3; key++ {
		if time.Now().After(deadline) {
			t.Fatalf("4 s after GOMAXPROCS went from 2 to 3, with keyed submits every 10 ms, %d keys run at once; Keyed.Stats %+v",
				hw.running.Load(), k.Stats())
		}
		must(t, k.Submit(key, held))
		time.Sleep(10 * time.Millisecond)
	}
}

// Hooks: Started gets "TaskInfo.Wait set to the time from its submit to this moment";
// Discarded gets "TaskInfo.Wait set to the time the task waited"; TaskInfo: "Wait is the
// time from the task's submit to its start (or its discard)". A keyed task that waited behind
// its key's held task, and keyed tasks whose turn DiscardOldest dropped after they waited,
// report at least the time they were held (lower bounds only: a slow machine cannot fail
// them).
func TestAdvKQHookWaitTimesOfKeyedTasksUnderDiscardOldest(t *testing.T) {
	const hold = 30 * time.Millisecond
	var mu sync.Mutex
	var startedWaits, discardedWaits []time.Duration
	p := crew.New(2, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest),
		crew.WithHooks(crew.Hooks{
			Started:   func(i crew.TaskInfo) { mu.Lock(); startedWaits = append(startedWaits, i.Wait); mu.Unlock() },
			Discarded: func(i crew.TaskInfo) { mu.Lock(); discardedWaits = append(discardedWaits, i.Wait); mu.Unlock() },
		}))
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	gate, in := make(chan struct{}), make(chan struct{})
	must(t, k.Submit(0, func() { close(in); <-gate })) // key 0 holds one worker
	awaitReturn(t, "key 0's first task", in)
	must(t, k.Submit(0, func() {})) // waits behind it, in the key
	release := holdWorkers(t, plainPool{p}, 1, 0)
	must(t, k.Submit(1, func() { t.Error("a dropped keyed task ran") }))
	must(t, k.Submit(1, func() { t.Error("a dropped keyed task ran") }))
	time.Sleep(hold)
	must(t, p.Submit(func() {})) // drops key 1's turn, the oldest in the queue
	close(gate)
	release()
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	awaitReturn(t, "Pool.Wait", goRun(p.Wait))
	mu.Lock()
	defer mu.Unlock()
	if len(discardedWaits) != 2 {
		t.Fatalf("Discarded hook called %d times, want 2 (key 1's tasks); keyed %+v", len(discardedWaits), k.Stats())
	}
	for _, w := range discardedWaits {
		if w < hold {
			t.Errorf("a dropped keyed task's Discarded hook reports Wait %v, but it waited at least %v", w, hold)
		}
	}
	// Started: key 0's first task, the held plain task, key 0's second, the plain task that
	// dropped key 1's turn. Key 0's second waited at least hold.
	var long int
	for _, w := range startedWaits {
		if w >= hold {
			long++
		}
	}
	if len(startedWaits) != 4 || long < 1 {
		t.Errorf("Started waits %v: want 4, one of them at least %v", startedWaits, hold)
	}
}

// PauseAndWait: "Pause, then wait until none of p's tasks runs"; a parent's pause holds its
// sub-pools' starts; Keyed: a turn does not go on after Pause has returned. Two keys' turns
// run on a priority sub-pool with a bounded queue under CallerRuns: the root's PauseAndWait
// waits for the two held keyed tasks, returns once they end, and no later keyed task has
// started by then (Keyed.Stats: nothing running, the rest waiting); Resume runs them all.
func TestAdvKQRootPauseAndWaitWaitsForKeyedTurnsOfASubPool(t *testing.T) {
	root := crew.New(2)
	defer root.StopAndWait()
	sub := root.Sub(2, crew.WithPriority(1), crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	k := crew.NewKeyed[int](sub)
	const per = 5
	l := newKQLedger(2 * per)
	gate := make(chan struct{})
	in := make(chan struct{}, 2)
	for key := range 2 {
		for seq := range per {
			id := key*per + seq
			l.accepted[id].Store(true)
			f := l.task(id, key, seq, kqReturns)
			if seq == 0 {
				inner := f
				f = func() { in <- struct{}{}; <-gate; inner() }
			}
			must(t, k.Submit(key, f))
		}
	}
	for range 2 {
		awaitReturn(t, "the keys' first tasks", goRun(func() { <-in }))
	}
	var err error
	paused := goRun(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = root.PauseAndWait(ctx)
	})
	stillBlocked(t, "PauseAndWait while keyed tasks run", paused)
	close(gate)
	awaitReturn(t, "PauseAndWait", paused)
	if err != nil {
		t.Fatalf("PauseAndWait = %v", err)
	}
	if n := l.runs.Load(); n != 2 {
		t.Fatalf("%d keyed tasks had started when PauseAndWait returned, want the 2 held ones", n)
	}
	if s := k.Stats(); s.Running != 0 || s.Waiting != 2*per-2 || s.Completed != 2 {
		t.Fatalf("Keyed.Stats after PauseAndWait: %+v, want none running, %d waiting", s, 2*per-2)
	}
	if s := root.Stats(); s.Running != 0 {
		t.Fatalf("root Stats after PauseAndWait: %+v, want none running", s)
	}
	root.Resume()
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	if tally := l.check(t, "after Resume", kqIDs(0, 2*per)); tally.ran != 2*per {
		t.Fatalf("%d of %d keyed tasks ran", tally.ran, 2*per)
	}
}

// Keyed: "tasks with the same key run one at a time, in the order their submits took effect";
// "A Keyed is safe for concurrent use"; StopNow: every accepted task "either runs exactly once
// or is returned". Many goroutines submit to the same few keys at once (each goroutine's own
// submits of a key take effect in its order), on a pool with a bounded queue under
// DiscardOldest and a bounded Keyed, with plain submits dropping turns and StopNow in the
// middle: no two tasks of a key overlap, each goroutine's tasks of a key run in its order,
// and each accepted task ran, was dropped or was handed back exactly once.
func TestAdvKQManySubmittersPerKeyWithStopNow(t *testing.T) {
	const keys, submitters = 3, 6
	per := 40
	if testing.Short() {
		per = 15
	}
	var l *kqLedger
	var h kqHooks
	p := crew.New(3, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest), crew.WithHooks(h.hooks()),
		crew.WithDiscardHandler(func(v any) { l.discard(v) }), crew.WithPanicHandler(func(any, []byte) {}))
	k := crew.NewKeyed[int](p, crew.WithQueueSize(8))
	n := keys * submitters * per
	l = newKQLedger(n + 200)
	var inside [keys]atomic.Int32
	var overlaps atomic.Int32
	var submits atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for s := range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range per * keys {
				key, seq := i%keys, i/keys
				id := (s*keys+key)*per + seq
				// Order is checked per (submitter, key) by the ledger; overlap per key here.
				inner := l.task(id, s*keys+key, seq, kqKind(seq))
				f := func() {
					if inside[key].Add(1) != 1 {
						overlaps.Add(1)
					}
					defer inside[key].Add(-1)
					inner()
				}
				submits.Add(1)
				l.accepted[id].Store(k.Submit(key, f) == nil)
			}
		}()
	}
	wg.Add(1)
	go func() { // plain tasks that push the oldest turn out
		defer wg.Done()
		<-start
		for i := range 200 {
			id := n + i
			submits.Add(1)
			l.accepted[id].Store(p.Submit(l.task(id, -1, 0, kqReturns)) == nil)
		}
	}()
	var returned []func()
	stopped := goRun(func() {
		<-start
		deadline := time.Now().Add(5 * time.Second) // StopNow once a quarter ran, or after 5 s
		for l.runs.Load() < int64(n/4) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Microsecond)
		}
		returned = p.StopNow()
	})
	close(start)
	awaitReturn(t, "the submitters", goRun(wg.Wait))
	awaitReturn(t, "StopNow", stopped)
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	l.settle(returned)
	if overlaps.Load() != 0 {
		t.Fatalf("%d times a keyed task started while another of its key ran", overlaps.Load())
	}
	kt := l.check(t, "keyed", kqIDs(0, n))
	pt := l.check(t, "plain", kqIDs(n, n+200))
	s := k.Stats()
	idleIdentity(t, "Keyed.Stats", s)
	if s.Accepted != uint64(kt.accepted) || s.Returned != uint64(kt.returned) || s.Discarded != uint64(kt.dropped) ||
		s.Panicked != uint64(kt.panicked) {
		t.Fatalf("Keyed.Stats %+v; keyed tasks %+v", s, kt)
	}
	idleIdentity(t, "Pool.Stats", p.Stats())
	refused := submits.Load() - int64(kt.accepted+pt.accepted)
	if h.queued.Load() != submits.Load() || h.rejected.Load() != refused || h.started.Load() != int64(kt.ran+pt.ran) ||
		h.finished.Load() != h.started.Load() || h.discarded.Load() != int64(kt.dropped+pt.dropped) {
		t.Fatalf("hooks %v; %d submits, %d refused; keyed %+v plain %+v", &h, submits.Load(), refused, kt, pt)
	}
	if testing.Verbose() {
		t.Logf("keyed %+v plain %+v", kt, pt)
	}
}
