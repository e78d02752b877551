package crew_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// advHooks are hooks that misbehave on a schedule: the Started hook calls runtime.Goexit on
// every goexitEvery-th call and panics with nil on every nilEvery-th; the Finished hook
// likewise on its own counts. They count what they were told, and what they did.
type advHooks struct {
	goexitEvery, nilEvery                  int64
	queued, started, finished, rejected    atomic.Int64
	startedExits, startedNils              atomic.Int64
	finishedExits, finishedNils, swallowed atomic.Int64
	handled, handledNil                    atomic.Int64 // the panic handler's calls, and those with panic(nil)'s value
}

func (h *advHooks) hooks() crew.Hooks {
	return crew.Hooks{
		Queued:   func(crew.TaskInfo) { h.queued.Add(1) },
		Rejected: func(error) { h.rejected.Add(1) },
		Started: func(crew.TaskInfo) {
			n := h.started.Add(1)
			switch {
			case h.goexitEvery > 0 && n%h.goexitEvery == 0:
				h.startedExits.Add(1)
				runtime.Goexit()
			case h.nilEvery > 0 && n%h.nilEvery == 0:
				h.startedNils.Add(1)
				panic(nil)
			}
		},
		Finished: func(i crew.TaskInfo) {
			n := h.finished.Add(1)
			switch {
			case h.goexitEvery > 0 && (n+3)%h.goexitEvery == 0:
				h.finishedExits.Add(1)
				if i.Panicked {
					h.swallowed.Add(1)
				}
				runtime.Goexit()
			case h.nilEvery > 0 && (n+5)%h.nilEvery == 0:
				h.finishedNils.Add(1)
				panic(nil)
			}
		},
	}
}

func (h *advHooks) handler(v any, _ []byte) {
	h.handled.Add(1)
	if fmt.Sprint(v) == fmt.Sprint(panicNilValue()) {
		h.handledNil.Add(1)
	}
}

func (h *advHooks) String() string {
	return fmt.Sprintf("queued %d started %d (Goexit %d, nil %d) finished %d (Goexit %d of which panicked %d, nil %d) rejected %d handled %d (nil %d)",
		h.queued.Load(), h.started.Load(), h.startedExits.Load(), h.startedNils.Load(), h.finished.Load(),
		h.finishedExits.Load(), h.swallowed.Load(), h.finishedNils.Load(), h.rejected.Load(), h.handled.Load(), h.handledNil.Load())
}

// advKeyedTask is keyed task seq of key: it checks the key's order and, on a schedule,
// panics with nil (counted in panics) or calls runtime.Goexit.
func advKeyedTask(c *keyChecker, key, seq int, panics *atomic.Int64) func() {
	return func() {
		c.enter(key, seq)
		defer c.exit(key)
		switch seq % 29 {
		case 7:
			panics.Add(1)
			panic(nil)
		case 19:
			runtime.Goexit()
		}
		if seq%5 == 0 {
			runtime.Gosched()
		}
	}
}

// TestAdvKeyedHooksThatGoexitOrPanicNilOnPrioritySubPools attacks Hooks ("A keyed task is
// seen once, as a task of its own, whatever turns its key takes"; "A hook that panics, with
// any value or with nil, has its panic sent to the pool's panic handler, and the task it was
// called for is unaffected: it still runs exactly once"; "a Started hook keeps its task from
// running, and the task counts as completed"; "a Finished hook comes after its task has
// ended, and the task's outcome stands, reported once (but a plain task's panic, which
// Finished precedes, then never reaches the panic handler)") on Keyeds whose pools are a
// prioritised sub-pool and its sub-pool, under Pause/Resume and Resize storms, with keyed
// tasks that panic with nil or call runtime.Goexit (Keyed.Submit: "the key's next task still
// runs"). Each keyed task is told to Started once; Finished is told once for each that ran;
// per key the tasks run one at a time in submit order; Keyed.Wait returns; Keyed.Stats add up
// (Completed counts a task whose Started hook ended it; Panicked the tasks that panicked);
// the panic handler gets every hook's panic and every task's but those a Finished hook's
// Goexit kept from it.
func TestAdvKeyedHooksThatGoexitOrPanicNilOnPrioritySubPools(t *testing.T) {
	t.Parallel()
	hLo := &advHooks{goexitEvery: 11, nilEvery: 13}
	hLeaf := &advHooks{goexitEvery: 9, nilEvery: 7}
	root := crew.New(3)
	hi := root.Sub(2, crew.WithPriority(2))
	lo := root.Sub(2, crew.WithPriority(1), crew.WithHooks(hLo.hooks()), crew.WithPanicHandler(hLo.handler))
	leaf := lo.Sub(2, crew.WithPriority(-1), crew.WithHooks(hLeaf.hooks()), crew.WithPanicHandler(hLeaf.handler))
	kLo, kLeaf := crew.NewKeyed[int](lo), crew.NewKeyed[int](leaf, crew.WithQueueSize(5))
	cLo, cLeaf := newKeyChecker(), newKeyChecker()
	var panicsLo, panicsLeaf atomic.Int64

	stop := make(chan struct{})
	var storms sync.WaitGroup
	for _, p := range []*crew.Pool{root, lo, leaf} {
		repeatUntil(&storms, stop, func() {
			p.Pause()
			time.Sleep(time.Duration(50+rand.IntN(200)) * time.Microsecond)
			p.Resume()
			time.Sleep(time.Duration(200+rand.IntN(800)) * time.Microsecond)
		})
	}
	repeatUntil(&storms, stop, func() {
		[]*crew.Pool{root, lo, leaf}[rand.IntN(3)].Resize(1 + rand.IntN(3))
		time.Sleep(300 * time.Microsecond)
	})
	repeatUntil(&storms, stop, func() {
		_ = hi.Submit(func() { time.Sleep(30 * time.Microsecond) })
		time.Sleep(100 * time.Microsecond)
	})

	watching := make(chan struct{})
	watchers := []<-chan struct{}{
		advWatch(t, "lo keyed", kLo.Stats, watching), advWatch(t, "leaf keyed", kLeaf.Stats, watching),
		advWatch(t, "lo", lo.Stats, watching), advWatch(t, "leaf", leaf.Stats, watching),
	}
	const keys, per = 5, 120
	together(keys, 1, func(key, _ int) {
		for seq := range per {
			must(t, kLo.Submit(key, advKeyedTask(cLo, key, seq, &panicsLo)))
			must(t, kLeaf.Submit(key, advKeyedTask(cLeaf, key, seq, &panicsLeaf)))
			if seq%30 == 0 {
				time.Sleep(200 * time.Microsecond)
			}
		}
	})
	awaitReturn(t, "kLo.Wait under the storms", goRun(kLo.Wait))
	awaitReturn(t, "kLeaf.Wait under the storms", goRun(kLeaf.Wait))
	close(watching)
	for _, w := range watchers {
		awaitReturn(t, "a Stats watcher", w)
	}
	close(stop)
	storms.Wait()
	for _, p := range []*crew.Pool{root, lo, leaf} {
		p.Resume()
	}
	awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))

	for _, x := range []struct {
		name   string
		c      *keyChecker
		k      *crew.Keyed[int]
		h      *advHooks
		panics *atomic.Int64
	}{{"lo", cLo, kLo, hLo, &panicsLo}, {"leaf", cLeaf, kLeaf, hLeaf, &panicsLeaf}} {
		c, h := x.c, x.h
		c.check(t, x.name)
		s := x.k.Stats()
		idleIdentity(t, x.name+" keyed", s)
		const n = keys * per
		ran := int64(c.ranCount())
		if s.Accepted != n || h.queued.Load() != n || h.rejected.Load() != 0 {
			t.Errorf("%s: Keyed.Stats %+v, hooks %v: want %d accepted, queued", x.name, s, h, n)
		}
		if h.started.Load() != n {
			t.Errorf("%s: Started told %d times for %d keyed tasks (%v)", x.name, h.started.Load(), n, h)
		}
		if ran != n-h.startedExits.Load() {
			t.Errorf("%s: %d keyed tasks ran; want %d less the %d whose Started hook called Goexit (%v)", x.name, ran, n, h.startedExits.Load(), h)
		}
		if h.finished.Load() != ran {
			t.Errorf("%s: Finished told %d times, %d keyed tasks ran (%v)", x.name, h.finished.Load(), ran, h)
		}
		if s.Panicked != uint64(x.panics.Load()) {
			t.Errorf("%s: Keyed.Stats.Panicked %d, %d keyed tasks panicked (%+v)", x.name, s.Panicked, x.panics.Load(), s)
		}
		wantHandled := x.panics.Load() - h.swallowed.Load() + h.startedNils.Load() + h.finishedNils.Load()
		if h.handled.Load() != wantHandled || h.handledNil.Load() != wantHandled {
			t.Errorf("%s: the panic handler got %d panics (%d of panic(nil)), want %d (%v)", x.name, h.handled.Load(), h.handledNil.Load(), wantHandled, h)
		}
		if h.startedExits.Load() == 0 || h.finishedExits.Load() == 0 || h.startedNils.Load() == 0 {
			t.Errorf("%s: the hooks never misbehaved: %v", x.name, h)
		}
	}
	for i, p := range []*crew.Pool{root, hi, lo, leaf} {
		idleIdentity(t, fmt.Sprintf("pool %d", i), p.Stats())
	}
}

// TestAdvKeyedHooksThatGoexitAmidStopNow attacks StopNow ("Every accepted task either runs
// exactly once or is returned (or failed) by StopNow, never both, and counts in
// Stats.Returned if it is"; "A Keyed on the pool keeps its order through StopNow: a key
// whose queued tasks StopNow hands back runs none of its tasks afterwards") of a root, of a
// prioritised sub-pool or of its sub-pool, racing with keyed turns on the sub-pool of the
// sub-pool whose Started and Finished hooks call runtime.Goexit or panic with nil, and with
// Pause/Resume and Resize storms. Each accepted keyed task ran once, was handed back, or was
// kept from running by its Started hook, never two of these; Started was told once for each
// task that started and Finished once for each that ran; per key no task that ran came after
// one handed back; Keyed.Wait returns and Keyed.Stats (Returned the tasks handed back) and
// the pools' Stats add up.
func TestAdvKeyedHooksThatGoexitAmidStopNow(t *testing.T) {
	t.Parallel()
	for iter := range 16 {
		h := &advHooks{goexitEvery: 7, nilEvery: 5}
		root := crew.New(3)
		mid := root.Sub(2, crew.WithPriority(1))
		leaf := mid.Sub(2, crew.WithHooks(h.hooks()), crew.WithPanicHandler(h.handler))
		k := crew.NewKeyed[int](leaf)
		kRoot := crew.NewKeyed[int](root)
		const keys, per = 4, 80
		var runs [keys][per]atomic.Int32
		var rootRuns [keys][per]atomic.Int32
		var accepted, rootAccepted [keys][per]bool

		stop := make(chan struct{})
		var storms sync.WaitGroup
		repeatUntil(&storms, stop, func() {
			p := []*crew.Pool{root, mid, leaf}[rand.IntN(3)]
			p.Pause()
			time.Sleep(100 * time.Microsecond)
			p.Resume()
			time.Sleep(300 * time.Microsecond)
		})
		repeatUntil(&storms, stop, func() {
			[]*crew.Pool{root, mid, leaf}[rand.IntN(3)].Resize(1 + rand.IntN(3))
			time.Sleep(250 * time.Microsecond)
		})
		watching := make(chan struct{})
		watchers := []<-chan struct{}{
			advWatch(t, "leaf keyed", k.Stats, watching), advWatch(t, "root keyed", kRoot.Stats, watching),
			advWatch(t, "root", root.Stats, watching), advWatch(t, "mid", mid.Stats, watching), advWatch(t, "leaf", leaf.Stats, watching),
		}
		var subs sync.WaitGroup
		for key := range keys {
			subs.Add(1)
			go func() {
				defer subs.Done()
				for seq := range per {
					err := k.Submit(key, func() {
						runs[key][seq].Add(1)
						if seq%9 == 4 {
							runtime.Goexit()
						}
						if seq%3 == 0 {
							time.Sleep(10 * time.Microsecond)
						}
					})
					switch {
					case err == nil:
						accepted[key][seq] = true
					case !errors.Is(err, crew.ErrStopped):
						t.Errorf("Keyed.Submit = %v", err)
					}
					if kRoot.Submit(key, func() { rootRuns[key][seq].Add(1) }) == nil {
						rootAccepted[key][seq] = true
					}
				}
			}()
		}
		time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
		out := []*crew.Pool{root, mid, leaf}[iter%3].StopNow()
		close(stop)
		storms.Wait()
		awaitReturn(t, "the submitters after StopNow", goRun(subs.Wait))
		awaitReturn(t, "Keyed.Wait after StopNow", goRun(k.Wait))
		awaitReturn(t, "the root's Keyed.Wait after StopNow", goRun(kRoot.Wait))
		awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))
		close(watching)
		for _, w := range watchers {
			awaitReturn(t, "a Stats watcher", w)
		}

		var ranBefore [keys][per]int32
		for key := range keys {
			for seq := range per {
				ranBefore[key][seq] = runs[key][seq].Load()
			}
		}
		for _, f := range out {
			<-goRun(f) // a task may call runtime.Goexit
		}
		s := k.Stats()
		idleIdentity(t, "leaf keyed", s)
		idleIdentity(t, "root keyed", kRoot.Stats())
		var nAccepted, nRan, nBack int64
		for key := range keys {
			lastRan, firstBack := -1, -1
			for seq := range per {
				before, all := ranBefore[key][seq], runs[key][seq].Load()
				if !accepted[key][seq] {
					if all != 0 {
						t.Fatalf("iter %d key %d task %d: refused, but ran %d times", iter, key, seq, all)
					}
					continue
				}
				nAccepted++
				nRan += int64(before)
				nBack += int64(all - before)
				if all > 1 {
					t.Fatalf("iter %d key %d task %d: ran %d times before StopNow's hand-back and %d after", iter, key, seq, before, all-before)
				}
				if before == 1 {
					lastRan = seq
				} else if all == 1 && firstBack < 0 {
					firstBack = seq
				}
			}
			if firstBack >= 0 && lastRan > firstBack {
				t.Fatalf("iter %d key %d: task %d handed back by StopNow, yet task %d of the key ran", iter, key, firstBack, lastRan)
			}
			for seq := range per {
				if n := rootRuns[key][seq].Load(); (n == 1) != rootAccepted[key][seq] || n > 1 {
					t.Fatalf("iter %d: root keyed task %d/%d ran %d times (accepted %v)", iter, key, seq, n, rootAccepted[key][seq])
				}
			}
		}
		if nBack != int64(s.Returned) {
			t.Fatalf("iter %d: %d leaf keyed tasks handed back, Keyed.Stats.Returned %d (%+v)", iter, nBack, s.Returned, s)
		}
		if exits := h.startedExits.Load(); nRan+nBack+exits != nAccepted {
			t.Fatalf("iter %d: %d keyed tasks ran, %d were handed back and %d kept from running by their Started hook, of %d accepted (%v)",
				iter, nRan, nBack, exits, nAccepted, h)
		}
		if h.started.Load() != nRan+h.startedExits.Load() || h.finished.Load() != nRan {
			t.Fatalf("iter %d: %d keyed tasks ran; hooks %v", iter, nRan, h)
		}
		if uint64(nAccepted) != s.Accepted || s.Completed+s.Panicked != uint64(nRan+h.startedExits.Load()) {
			t.Fatalf("iter %d: Keyed.Stats %+v; %d accepted, %d ran, %d ended by their Started hook", iter, s, nAccepted, nRan, h.startedExits.Load())
		}
		for i, p := range []*crew.Pool{root, mid, leaf} {
			idleIdentity(t, fmt.Sprintf("iter %d pool %d", iter, i), p.Stats())
		}
	}
}

// TestAdvKeyedSubmitHooksThatGoexitOrPanicNil attacks Hooks ("a Queued or Rejected hook ends
// the submitter inside its submit, and the task is not accepted and never runs"; "A hook
// that panics, with any value or with nil, has its panic sent to the pool's panic handler,
// and the task it was called for is unaffected: it still runs exactly once") for
// Keyed.Submit, TrySubmit and SubmitContext on a prioritised sub-pool, with a Keyed queue
// bound under WithNonBlocking so that some submits are refused, while the pool is paused and
// resumed. A submitter whose Queued hook called Goexit never had its task run, and the key's
// later tasks still ran in order; a refused task never ran; Keyed.Stats count each accepted
// and each refused submit once; Keyed.Wait returns.
func TestAdvKeyedSubmitHooksThatGoexitOrPanicNil(t *testing.T) {
	t.Parallel()
	var queued, queuedExits, queuedNils, rejected, rejectedExits, handled atomic.Int64
	root := crew.New(2)
	sub := root.Sub(2, crew.WithPriority(1), crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }), crew.WithHooks(crew.Hooks{
		Queued: func(crew.TaskInfo) {
			switch n := queued.Add(1); {
			case n%17 == 0:
				queuedExits.Add(1)
				runtime.Goexit()
			case n%5 == 0:
				queuedNils.Add(1)
				panic(nil)
			}
		},
		Rejected: func(err error) {
			if !errors.Is(err, crew.ErrQueueFull) {
				panic(fmt.Sprintf("Rejected hook told %v", err))
			}
			if rejected.Add(1)%2 == 0 {
				rejectedExits.Add(1)
				runtime.Goexit()
			}
		},
	}))
	defer root.StopAndWait()
	k := crew.NewKeyed[int](sub, crew.WithQueueSize(4), crew.WithNonBlocking())
	c := newKeyChecker()

	stop := make(chan struct{})
	var storms sync.WaitGroup
	repeatUntil(&storms, stop, func() {
		sub.Pause()
		time.Sleep(200 * time.Microsecond)
		sub.Resume()
		time.Sleep(500 * time.Microsecond)
	})
	const keys, per = 4, 150
	var ok, refused, ended atomic.Int64
	var wrongErr atomic.Value
	var submitters sync.WaitGroup
	for key := range keys {
		submitters.Add(1)
		go func() {
			defer submitters.Done()
			for seq := range per {
				// Each submit on a goroutine of its own, which a hook's Goexit may end; the
				// next waits for it, so that the key's submits take effect in order.
				done := goRun(func() {
					returned := false
					defer func() {
						if !returned {
							ended.Add(1)
						}
					}()
					var err error
					task := func() {
						c.enter(key, seq)
						c.exit(key)
					}
					switch seq % 3 {
					case 0:
						err = k.Submit(key, task)
					case 1:
						if !k.TrySubmit(key, task) {
							err = crew.ErrQueueFull
						}
					default:
						err = k.SubmitContext(context.Background(), key, task)
					}
					returned = true
					switch {
					case err == nil:
						ok.Add(1)
					case errors.Is(err, crew.ErrQueueFull):
						refused.Add(1)
					default:
						wrongErr.Store(err)
					}
				})
				<-done
				if seq%8 == 0 {
					time.Sleep(100 * time.Microsecond)
				}
			}
		}()
	}
	awaitReturn(t, "the submitters", goRun(submitters.Wait))
	close(stop)
	storms.Wait()
	sub.Resume()
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	if err := wrongErr.Load(); err != nil {
		t.Fatalf("a keyed submit = %v", err)
	}
	c.check(t, "keyed")
	s := k.Stats()
	idleIdentity(t, "keyed", s)
	ran := int64(c.ranCount())
	if ran != ok.Load() || s.Accepted != uint64(ok.Load()) {
		t.Errorf("%d keyed tasks ran, %d submits returned nil; Keyed.Stats %+v", ran, ok.Load(), s)
	}
	if s.Rejected != uint64(rejected.Load()) || s.Rejected != uint64(refused.Load()+rejectedExits.Load()) {
		t.Errorf("Keyed.Stats.Rejected %d; the Rejected hook was told %d times (%d ended the submitter), %d submits returned ErrQueueFull",
			s.Rejected, rejected.Load(), rejectedExits.Load(), refused.Load())
	}
	if ended.Load() != queuedExits.Load()+rejectedExits.Load() {
		t.Errorf("%d submitters ended inside their submit; the hooks called Goexit %d + %d times", ended.Load(), queuedExits.Load(), rejectedExits.Load())
	}
	if n := int64(keys * per); ok.Load()+refused.Load()+ended.Load() != n || queued.Load() != n {
		t.Errorf("%d accepted + %d refused + %d ended != %d submits; Queued told %d times", ok.Load(), refused.Load(), ended.Load(), n, queued.Load())
	}
	if handled.Load() != queuedNils.Load() {
		t.Errorf("the panic handler got %d panics, the Queued hook panicked %d times", handled.Load(), queuedNils.Load())
	}
	if queuedExits.Load() == 0 || rejectedExits.Load() == 0 || queuedNils.Load() == 0 {
		t.Errorf("the hooks never misbehaved: Queued Goexit %d nil %d, Rejected Goexit %d", queuedExits.Load(), queuedNils.Load(), rejectedExits.Load())
	}
}

// TestAdvKeyedStartedHookPausesAnAncestor attacks Keyed ("a turn goes on to the key's next
// task only if the pool would start a task then (not after Pool.Pause has returned ...)") and
// Pause ("Pause stops tasks of the pool, and of its sub-pools, from starting until
// Pool.Resume: once Pause has returned, none starts"; "safe to call from a task"), with the
// Pause called by the Started hook of a keyed task (Hooks: "a hook may call Pool.Stats,
// Pool.TrySubmit, Pool.Resize or Pool.Stop on the pool") on a sub-pool of a prioritised
// sub-pool, pausing in turn the root, the middle pool and the leaf, and with other Started
// hooks calling runtime.Goexit. The root has one worker, so no start can have been decided
// before the Pause returned on another one. No keyed task is told Started between a Pause
// and its Resume; per key the tasks run in order; Keyed.Wait returns; Keyed.Stats add up.
func TestAdvKeyedStartedHookPausesAnAncestor(t *testing.T) {
	t.Parallel()
	root := crew.New(1)
	mid := root.Sub(1, crew.WithPriority(1))
	var pools []*crew.Pool
	var paused atomic.Int32 // 1 from a hook's Pause until just before its Resume
	var pauses, exits, started, early atomic.Int64
	resume := make(chan *crew.Pool, 1)
	leaf := mid.Sub(2, crew.WithHooks(crew.Hooks{
		Started: func(crew.TaskInfo) {
			n := started.Add(1)
			if paused.Load() == 1 {
				early.Add(1)
			}
			switch {
			case n%10 == 0:
				p := pools[(n/10)%3]
				p.Pause()
				paused.Store(1)
				pauses.Add(1)
				resume <- p
			case n%7 == 0:
				exits.Add(1)
				runtime.Goexit()
			}
		},
	}))
	pools = []*crew.Pool{root, mid, leaf}
	defer root.StopAndWait()
	k := crew.NewKeyed[int](leaf)
	c := newKeyChecker()
	resumer := goRun(func() {
		for p := range resume {
			time.Sleep(300 * time.Microsecond)
			paused.Store(0)
			p.Resume()
		}
	})
	const keys, per = 3, 60
	for seq := range per {
		for key := range keys {
			must(t, k.Submit(key, func() { c.enter(key, seq); c.exit(key) }))
		}
	}
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	close(resume)
	awaitReturn(t, "the resumer", resumer)
	c.check(t, "keyed")
	if n := early.Load(); n != 0 {
		t.Errorf("%d keyed tasks were told Started after a Pause returned and before its Resume (%d pauses)", n, pauses.Load())
	}
	if ran := int64(c.ranCount()); ran != keys*per-exits.Load() || started.Load() != keys*per {
		t.Errorf("%d keyed tasks ran and Started was told %d times, of %d, %d ended by their Started hook", ran, started.Load(), keys*per, exits.Load())
	}
	idleIdentity(t, "keyed", k.Stats())
	if pauses.Load() == 0 {
		t.Error("no hook paused")
	}
}

// TestAdvKeyedStartedHookCallsStopNow attacks StopNow ("It is safe to call from a task and
// concurrently with any other method"; "Every accepted task either runs exactly once or is
// returned (or failed) by StopNow, never both"; "a key whose queued tasks StopNow hands back
// runs none of its tasks afterwards. A key whose turn was running when StopNow was called
// may run the tasks it had waiting after StopNow returns") called from the Started hook of a
// keyed task on a prioritised sub-pool (the root's StopNow, or the sub-pool's), while the
// Finished hooks submit more keyed tasks of a key of their own and other Started hooks
// call runtime.Goexit. Each accepted keyed task ran once, was handed back, or was kept from
// running by its Started hook; per key none ran after one handed back; Keyed.Wait returns;
// Keyed.Stats.Returned counts what was handed back and the pools' Stats add up.
func TestAdvKeyedStartedHookCallsStopNow(t *testing.T) {
	t.Parallel()
	for iter := range 8 {
		root := crew.New(2)
		var k *crew.Keyed[int]
		var c *keyChecker
		var sub *crew.Pool
		var started, exits atomic.Int64
		var outMu sync.Mutex
		var out []func()
		const hookKey = 99
		var hookMu sync.Mutex
		hookSeq := 0
		var hookAccepted []bool
		stopAt := int64(20 + 15*iter)
		victim := iter % 2
		sub = root.Sub(2, crew.WithPriority(1), crew.WithHooks(crew.Hooks{
			Started: func(crew.TaskInfo) {
				n := started.Add(1)
				switch {
				case n == stopAt:
					got := []*crew.Pool{root, sub}[victim].StopNow()
					outMu.Lock()
					out = append(out, got...)
					outMu.Unlock()
				case n%9 == 0:
					exits.Add(1)
					runtime.Goexit()
				}
			},
			Finished: func(crew.TaskInfo) {
				hookMu.Lock()
				defer hookMu.Unlock()
				if hookSeq >= 40 {
					return
				}
				seq := hookSeq
				hookSeq++
				hookAccepted = append(hookAccepted, k.TrySubmit(hookKey, func() { c.enter(hookKey, seq); c.exit(hookKey) }))
			},
		}))
		k = crew.NewKeyed[int](sub)
		c = newKeyChecker()
		const keys, per = 4, 40
		var accepted [keys][per]bool
		runs := map[[2]int]*atomic.Int32{}
		sub.Pause() // every task is queued before the first starts
		for seq := range per {
			for key := range keys {
				r := new(atomic.Int32)
				runs[[2]int{key, seq}] = r
				accepted[key][seq] = k.Submit(key, func() { r.Add(1); c.enter(key, seq); c.exit(key) }) == nil
			}
		}
		sub.Resume()
		awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
		awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))
		c.check(t, "keyed")

		outMu.Lock()
		handed := out
		outMu.Unlock()
		var nAcceptedHook int64
		var ranBefore = map[[2]int]int32{}
		for id, r := range runs {
			ranBefore[id] = r.Load()
		}
		hookMu.Lock()
		hookRan := 0
		for seq, ok := range hookAccepted {
			if ok {
				nAcceptedHook++
				if _, ran := c.runs[[2]int{hookKey, seq}]; ran {
					hookRan++
				}
			}
		}
		hookMu.Unlock()
		for _, f := range handed {
			f()
		}
		var nAccepted, nRan, nBack int64
		for key := range keys {
			lastRan, firstBack := -1, -1
			for seq := range per {
				r := runs[[2]int{key, seq}]
				before, all := ranBefore[[2]int{key, seq}], r.Load()
				if !accepted[key][seq] {
					continue
				}
				nAccepted++
				if all > 1 {
					t.Fatalf("iter %d: keyed task %d/%d ran %d times, counting the hand-back", iter, key, seq, all)
				}
				nRan += int64(before)
				nBack += int64(all - before)
				if before == 1 {
					lastRan = seq
				} else if all == 1 && firstBack < 0 {
					firstBack = seq
				}
			}
			if firstBack >= 0 && lastRan > firstBack {
				t.Fatalf("iter %d key %d: task %d handed back by StopNow, yet task %d ran", iter, key, firstBack, lastRan)
			}
		}
		nAccepted += nAcceptedHook
		s := k.Stats()
		idleIdentity(t, "keyed", s)
		handedHook := int64(len(handed)) - nBack
		if s.Accepted != uint64(nAccepted) || s.Returned != uint64(len(handed)) {
			t.Fatalf("iter %d: Keyed.Stats %+v; %d accepted, %d handed back", iter, s, nAccepted, len(handed))
		}
		if got := nRan + int64(hookRan) + nBack + handedHook + exits.Load(); got != nAccepted {
			t.Fatalf("iter %d: ran %d + hook key ran %d + handed back %d + ended by Started hook %d = %d, want %d accepted",
				iter, nRan, hookRan, int64(len(handed)), exits.Load(), got, nAccepted)
		}
		for i, p := range []*crew.Pool{root, sub} {
			idleIdentity(t, fmt.Sprintf("iter %d pool %d", iter, i), p.Stats())
		}
	}
}

// TestAdvKeyedSubmitAfterPoolContextEnded attacks WithContext ("a submit to the pool or to
// any of its sub-pools made after ctx has ended returns ErrStopped") and Keyed.Submit ("After
// the pool is stopped it returns ErrStopped ... On error the task was not accepted and never
// runs") on a pool with hooks (Hooks.Rejected: "called ... when a submit did not accept its
// task, with the error the submit returns: ... ErrStopped") and on its prioritised sub-pool:
// a keyed submit made right after the pool's context was canceled, before anything else
// looked at the pool, is refused with ErrStopped as a plain Submit is, its task never runs,
// and Keyed.Stats accepts nothing.
func TestAdvKeyedSubmitAfterPoolContextEnded(t *testing.T) {
	t.Parallel()
	accepted := 0
	for i := range 300 {
		var rejectedStopped atomic.Int64
		hooks := crew.WithHooks(crew.Hooks{Rejected: func(err error) {
			if errors.Is(err, crew.ErrStopped) {
				rejectedStopped.Add(1)
			}
		}})
		ctx, cancel := context.WithCancel(context.Background())
		root := crew.New(2, crew.WithContext(ctx), hooks)
		sub := root.Sub(1, crew.WithPriority(1), hooks)
		p := []*crew.Pool{root, sub}[i%2]
		k := crew.NewKeyed[int](p)
		var ran atomic.Int32
		cancel()
		var err error
		switch i % 3 {
		case 0:
			err = k.Submit(1, func() { ran.Add(1) })
		case 1:
			if !k.TrySubmit(1, func() { ran.Add(1) }) {
				err = crew.ErrStopped
			}
		default:
			err = k.SubmitContext(context.Background(), 1, func() { ran.Add(1) })
		}
		if plainErr := p.Submit(func() { ran.Add(1) }); !errors.Is(plainErr, crew.ErrStopped) {
			t.Fatalf("a plain Submit after the context ended = %v, want ErrStopped", plainErr)
		}
		awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
		awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))
		if err == nil {
			// the accepted task runs, once: accepted after the pool stopped, it is not lost
			if ran.Load() != 1 {
				t.Fatalf("a keyed task accepted after the context ended ran %d times", ran.Load())
			}
			accepted++
			continue
		}
		if !errors.Is(err, crew.ErrStopped) || ran.Load() != 0 || k.Stats().Accepted != 0 || rejectedStopped.Load() != 2 {
			t.Fatalf("keyed submit = %v, ran %d, Keyed.Stats %+v, Rejected hook told ErrStopped %d times of 2",
				err, ran.Load(), k.Stats(), rejectedStopped.Load())
		}
	}
	if accepted > 0 {
		t.Fatalf("%d of 300 keyed submits made after the pool's WithContext context was canceled were accepted; a plain Submit made after each was refused with ErrStopped", accepted)
	}
}

// TestAdvKeyedBlockedSubmittersAtStopNow attacks StopNow ("It stops accepting before it
// empties the queue: a submitter blocked on a full queue when StopNow is called returns
// ErrStopped, never a nil error for a task StopNow then hands back") for submitters blocked
// on a Keyed's own full queue (NewKeyed: "with WithQueueSize(n), n accepted tasks may wait
// ... and the next submit blocks until one starts") on a paused prioritised sub-pool, or on
// a sub-pool of a sub-pool whose parent is paused, with hooks on the sub-pool (Rejected:
// "with the error the submit returns"). StopNow of the root, the middle pool or the leaf
// hands back exactly the tasks that were waiting, every blocked submitter returns ErrStopped
// and its task never runs, and Keyed.Stats add up.
func TestAdvKeyedBlockedSubmittersAtStopNow(t *testing.T) {
	t.Parallel()
	for iter := range 9 {
		var rejected atomic.Int64
		root := crew.New(2)
		mid := root.Sub(2, crew.WithPriority(1))
		leaf := mid.Sub(2, crew.WithHooks(crew.Hooks{Rejected: func(err error) {
			if errors.Is(err, crew.ErrStopped) {
				rejected.Add(1)
			}
		}}))
		pools := []*crew.Pool{root, mid, leaf}
		k := crew.NewKeyed[int](leaf, crew.WithQueueSize(3))
		pools[iter%3].Pause()
		var ran atomic.Int32
		for i := range 3 {
			must(t, k.Submit(i%2, func() { ran.Add(1) }))
		}
		const blocked = 6
		errs := make(chan error, blocked)
		for i := range blocked {
			go func() {
				switch i % 3 {
				case 0:
					errs <- k.Submit(i, func() { ran.Add(1) })
				case 1:
					errs <- k.SubmitContext(context.Background(), i%2, func() { ran.Add(1) })
				default:
					errs <- k.Submit(i%2, func() { ran.Add(1) })
				}
			}()
		}
		select {
		case err := <-errs:
			t.Fatalf("a keyed submit on a full Keyed queue returned %v while the pool was paused", err)
		case <-time.After(20 * time.Millisecond): // the submitters block meanwhile
		}
		out := pools[(iter/3)%3].StopNow()
		for range blocked {
			select {
			case err := <-errs:
				if !errors.Is(err, crew.ErrStopped) {
					t.Fatalf("iter %d: a submitter blocked when StopNow was called got %v, want ErrStopped", iter, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("iter %d: a blocked keyed submitter did not return after StopNow", iter)
			}
		}
		awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
		for _, p := range pools {
			p.Resume()
		}
		awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))
		s := k.Stats()
		idleIdentity(t, "keyed", s)
		if len(out) != 3 || ran.Load() != 0 || s.Returned != 3 || s.Accepted != 3 || rejected.Load() != blocked {
			t.Fatalf("iter %d: StopNow handed back %d (want the 3 waiting), %d ran, Keyed.Stats %+v, Rejected hook told ErrStopped %d times of %d",
				iter, len(out), ran.Load(), s, rejected.Load(), blocked)
		}
		for i, p := range pools {
			idleIdentity(t, fmt.Sprintf("iter %d pool %d", iter, i), p.Stats())
		}
	}
}

// TestAdvKeyedHooksCallBackIntoThePoolAndTheKeyed attacks Hooks ("Each hook runs on the
// goroutine named below with no lock of the pool held, so a hook may call Pool.Stats,
// Pool.TrySubmit, Pool.Resize or Pool.Stop on the pool") and Keyed ("safe for concurrent
// use"; Keyed.Stats: "safe for concurrent use and from a task") with hooks of a prioritised
// sub-pool that, around each keyed task, call Keyed.Stats, Keyed.TrySubmit of a key of their
// own, Pool.TrySubmit, Pool.Resize, Pause and Resume of the sub-pool, and finally Pool.Stop
// from a Finished hook, while plain submitters race. Nothing deadlocks: Keyed.Wait and
// StopAndWait return; every keyed task that a submit accepted ran exactly once, in order per
// key; submits after the Stop are refused with ErrStopped; Keyed.Stats and the pools' Stats
// add up.
func TestAdvKeyedHooksCallBackIntoThePoolAndTheKeyed(t *testing.T) {
	t.Parallel()
	root := crew.New(3)
	var k *crew.Keyed[int]
	var sub *crew.Pool
	c := newKeyChecker()
	const hookKey, stopAt = 1000, 150
	var hookMu sync.Mutex
	hookSeq, hookOK := 0, 0
	var plainOK, plainRan, finished atomic.Int64
	sub = root.Sub(2, crew.WithPriority(1), crew.WithHooks(crew.Hooks{
		Queued: func(crew.TaskInfo) { _ = k.Stats() },
		Started: func(crew.TaskInfo) {
			s := k.Stats()
			if s.Running < 0 || s.Waiting < 0 {
				panic(fmt.Sprintf("Keyed.Stats from a Started hook: %+v", s))
			}
			sub.Resize(1 + rand.IntN(3))
			if rand.IntN(8) == 0 {
				sub.Pause()
				sub.Resume()
			}
		},
		Finished: func(crew.TaskInfo) {
			if n := finished.Add(1); n == stopAt {
				sub.Stop()
			}
			if sub.TrySubmit(func() { plainRan.Add(1) }) {
				plainOK.Add(1)
			}
			hookMu.Lock()
			defer hookMu.Unlock()
			if hookSeq < 100 {
				seq := hookSeq
				hookSeq++
				if k.TrySubmit(hookKey, func() { c.enter(hookKey, seq); c.exit(hookKey) }) {
					hookOK++
				}
			}
		},
	}))
	k = crew.NewKeyed[int](sub)
	const keys, per = 4, 150
	var ok, stoppedErrs atomic.Int64
	together(keys, 1, func(key, _ int) {
		for seq := range per {
			switch err := k.Submit(key, func() { c.enter(key, seq); c.exit(key) }); {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, crew.ErrStopped):
				stoppedErrs.Add(1)
			default:
				t.Errorf("Keyed.Submit = %v", err)
			}
			if seq%10 == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	})
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))
	c.check(t, "keyed")
	hookMu.Lock()
	defer hookMu.Unlock()
	s := k.Stats()
	idleIdentity(t, "keyed", s)
	if ran := int64(c.ranCount()); ran != ok.Load()+int64(hookOK) || s.Accepted != uint64(ran) || s.Panicked != 0 {
		t.Errorf("%d keyed tasks ran; %d submits and %d hook submits accepted; Keyed.Stats %+v", ran, ok.Load(), hookOK, s)
	}
	if plainRan.Load() != plainOK.Load() {
		t.Errorf("%d plain tasks ran of %d accepted", plainRan.Load(), plainOK.Load())
	}
	if stoppedErrs.Load() == 0 {
		t.Logf("the Stop came after every submit")
	}
	for i, p := range []*crew.Pool{root, sub} {
		idleIdentity(t, fmt.Sprintf("pool %d", i), p.Stats())
	}
}
