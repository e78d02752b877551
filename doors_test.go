package crew_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
)

// A door is one way of sending tasks to a pool. open makes a pool with opts, whose tasks add 1
// to ran when they run, and returns what drives the door.
type door struct {
	name string
	open func(t *testing.T, opts []crew.Option, ran *atomic.Int32) doorRun
	// reports is set for a door whose caller learns of a task's Goexit (a future, a group,
	// a sequence...): its wait returns an error naming Goexit for a task that never ran.
	reports bool
	// offersWhenStopped is false for a door that refuses on a stopped pool before offering
	// any task (MapSeq): its hooks then see nothing.
	offersWhenStopped bool
	// group is set for a door whose wait is a group's: it reports a submit that a Queued or
	// Rejected hook ended with runtime.Goexit as a function that called it.
	group bool
}

type doorRun struct {
	send  func(n int)  // sends n tasks through the door; a hook may end its goroutine
	wait  func() error // waits for the tasks sent, as the door's caller would
	stop  func()       // stops the pool, so that the door refuses
	close func()       // stops the pool and waits for it to exit
	extra int          // tasks open sent itself, beside those of send
}

// onPool makes a door of a Pool of 4 workers: send sends one task through the door per call,
// and the errors it records are what wait returns, joined, after p.Wait.
func onPool(name string, reports bool, send func(p *crew.Pool, task func()) (wait func() error)) door {
	return door{name: name, reports: reports, offersWhenStopped: true,
		open: func(t *testing.T, opts []crew.Option, ran *atomic.Int32) doorRun {
			p := crew.New(4, opts...)
			var mu sync.Mutex
			var waits []func() error
			return doorRun{
				send: func(n int) {
					for range n {
						w := send(p, func() { ran.Add(1) })
						mu.Lock()
						waits = append(waits, w)
						mu.Unlock()
					}
				},
				wait: func() error {
					p.Wait()
					mu.Lock()
					defer mu.Unlock()
					var errs []error
					for _, w := range waits {
						errs = append(errs, w())
					}
					return errors.Join(errs...)
				},
				stop: p.Stop, close: p.StopAndWait,
			}
		}}
}

// onGroup makes a door of a group on a Pool of 4 workers.
func onGroup(name string, all bool, goFn func(g *crew.Group, fn func(context.Context) error)) door {
	return door{name: name, reports: true, offersWhenStopped: true, group: true,
		open: func(t *testing.T, opts []crew.Option, ran *atomic.Int32) doorRun {
			p := crew.New(4, opts...)
			mk := p.Group
			if all {
				mk = p.GroupAll
			}
			// Wait ends a group (its context is canceled, so functions given after it would
			// be skipped): the sends after a wait go to a new group.
			var mu sync.Mutex
			g, _ := mk(context.Background())
			cur := func() *crew.Group { mu.Lock(); defer mu.Unlock(); return g }
			return doorRun{
				send: func(n int) {
					for range n {
						goFn(cur(), func(context.Context) error { ran.Add(1); return nil })
					}
				},
				wait: func() error {
					err := cur().Wait()
					mu.Lock()
					g, _ = mk(context.Background())
					mu.Unlock()
					return err
				},
				stop: p.Stop, close: p.StopAndWait,
			}
		}}
}

// onCall makes a door of a call that runs every task before it returns (Map, ForEach, a range
// over MapSeq): its error is what wait returns.
func onCall(name string, offersWhenStopped bool, call func(p *crew.Pool, n int, fn func()) error) door {
	return door{name: name, reports: true, offersWhenStopped: offersWhenStopped,
		open: func(t *testing.T, opts []crew.Option, ran *atomic.Int32) doorRun {
			p := crew.New(4, opts...)
			var mu sync.Mutex
			var errs []error
			return doorRun{
				send: func(n int) {
					err := call(p, n, func() { ran.Add(1) })
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				},
				wait: func() error {
					mu.Lock()
					defer mu.Unlock()
					return errors.Join(errs...)
				},
				stop: p.Stop, close: p.StopAndWait,
			}
		}}
}

// rangeSeq ranges over seq to its end and returns the first error it yields.
func rangeSeq(seq func(func(int, error) bool)) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

var doors = []door{
	onPool("Submit", false, func(p *crew.Pool, task func()) func() error {
		err := p.Submit(task)
		return func() error { return err }
	}),
	onPool("TrySubmit", false, func(p *crew.Pool, task func()) func() error {
		p.TrySubmit(task)
		return func() error { return nil }
	}),
	onPool("SubmitContext", false, func(p *crew.Pool, task func()) func() error {
		err := p.SubmitContext(context.Background(), task)
		return func() error { return err }
	}),
	onPool("SubmitN", false, func(p *crew.Pool, task func()) func() error {
		err := p.SubmitN(2, task)
		return func() error { return err }
	}),
	{name: "Invoke", offersWhenStopped: true, open: func(t *testing.T, opts []crew.Option, ran *atomic.Int32) doorRun {
		p := crew.NewFunc(4, func(int) { ran.Add(1) }, opts...)
		return doorRun{
			send: func(n int) {
				for i := range n {
					_ = p.Invoke(i)
				}
			},
			wait: func() error { p.Wait(); return nil }, stop: p.Stop, close: p.StopAndWait,
		}
	}},
	onPool("Go", true, func(p *crew.Pool, task func()) func() error {
		f := crew.Go(p, func() (int, error) { task(); return 1, nil })
		return func() error { _, err := f.Wait(); return err }
	}),
	onGroup("Group.Go", false, (*crew.Group).Go),
	onGroup("Group.TryGo", false, func(g *crew.Group, fn func(context.Context) error) { g.TryGo(fn) }),
	onGroup("GroupAll.Go", true, (*crew.Group).Go),
	{name: "Results.Go", reports: true, offersWhenStopped: true, group: true,
		open: func(t *testing.T, opts []crew.Option, ran *atomic.Int32) doorRun {
			p := crew.New(4, opts...)
			var mu sync.Mutex // the sends after a wait go to new Results, as for a group
			r, _ := crew.NewResults[int](context.Background(), p)
			cur := func() *crew.Results[int] { mu.Lock(); defer mu.Unlock(); return r }
			return doorRun{
				send: func(n int) {
					for range n {
						cur().Go(func(context.Context) (int, error) { ran.Add(1); return 1, nil })
					}
				},
				wait: func() error {
					_, err := cur().Wait()
					mu.Lock()
					r, _ = crew.NewResults[int](context.Background(), p)
					mu.Unlock()
					return err
				},
				stop:  p.Stop,
				close: p.StopAndWait,
			}
		}},
	onCall("Map", true, func(p *crew.Pool, n int, fn func()) error {
		_, err := crew.Map(context.Background(), p, make([]int, n), func(context.Context, int) (int, error) { fn(); return 1, nil })
		return err
	}),
	onCall("ForEach", true, func(p *crew.Pool, n int, fn func()) error {
		return crew.ForEach(context.Background(), p, countTo(n), func(context.Context, int) error { fn(); return nil })
	}),
	onCall("MapSeq", false, func(p *crew.Pool, n int, fn func()) error {
		return rangeSeq(crew.MapSeq(context.Background(), p, countTo(n), func(_ context.Context, i int) (int, error) { fn(); return i, nil }))
	}),
	onCall("MapSeqUnordered", false, func(p *crew.Pool, n int, fn func()) error {
		return rangeSeq(crew.MapSeqUnordered(context.Background(), p, countTo(n), func(_ context.Context, i int) (int, error) { fn(); return i, nil }))
	}),
	{name: "Keyed", offersWhenStopped: true, open: func(t *testing.T, opts []crew.Option, ran *atomic.Int32) doorRun {
		p := crew.New(4, opts...)
		k := crew.NewKeyed[int](p)
		return doorRun{
			send: func(n int) {
				for i := range n {
					_ = k.Submit(i%3, func() { ran.Add(1) })
				}
			},
			wait: func() error { k.Wait(); return nil }, stop: p.Stop, close: p.StopAndWait,
		}
	}},
	// CallerRuns: the one worker is held and the one queue slot filled by open, so every task
	// sent runs on its submitter.
	{name: "CallerRuns", offersWhenStopped: true, open: func(t *testing.T, opts []crew.Option, ran *atomic.Int32) doorRun {
		p := crew.New(1, append([]crew.Option{crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns)}, opts...)...)
		task, started, release := blocker()
		must(t, p.Submit(task))
		<-started
		must(t, p.Submit(func() {}))
		var once sync.Once
		free := func() { once.Do(func() { close(release) }) }
		return doorRun{
			send: func(n int) {
				for range n {
					_ = p.Submit(func() { ran.Add(1) })
				}
			},
			wait:  func() error { return nil }, // the tasks ran before their Submit returned
			stop:  func() { free(); p.Stop() },
			close: func() { free(); p.StopAndWait() },
			extra: 2,
		}
	}},
}

// hookCounts counts the calls of each hook.
type hookCounts struct{ queued, started, finished, rejected, discarded atomic.Int32 }

func (c *hookCounts) hooks() crew.Hooks {
	return crew.Hooks{
		Queued:    func(crew.TaskInfo) { c.queued.Add(1) },
		Started:   func(crew.TaskInfo) { c.started.Add(1) },
		Finished:  func(crew.TaskInfo) { c.finished.Add(1) },
		Rejected:  func(error) { c.rejected.Add(1) },
		Discarded: func(crew.TaskInfo) { c.discarded.Add(1) },
	}
}

func (c *hookCounts) String() string {
	return fmt.Sprintf("Queued %d, Started %d, Finished %d, Rejected %d, Discarded %d",
		c.queued.Load(), c.started.Load(), c.finished.Load(), c.rejected.Load(), c.discarded.Load())
}

// TestHooksSeeEveryTaskWhateverItsDoor proves Hooks' "a pool's hooks see the pool's own
// tasks, whatever the door": through each door, every task is queued, started and finished
// once (a keyed task once, not once per turn), and every refusal is rejected once.
func TestHooksSeeEveryTaskWhateverItsDoor(t *testing.T) {
	t.Parallel()
	const n = 20
	for _, d := range doors {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			var c hookCounts
			var ran atomic.Int32
			r := d.open(t, []crew.Option{crew.WithHooks(c.hooks())}, &ran)
			r.send(n)
			must(t, returnsWithin(t, "the tasks sent", r.wait))
			r.close()
			want := int32(n + r.extra)
			if ran.Load() != n || c.queued.Load() != want || c.started.Load() != want || c.finished.Load() != want ||
				c.rejected.Load() != 0 {
				t.Fatalf("%d tasks sent, %d ran; hooks: %v; want %d of each but Rejected", n, ran.Load(), &c, want)
			}
			// A stopped pool refuses, and each refusal is queued and rejected.
			before := c.queued.Load()
			for range 3 { // one at a time: a Map or ForEach call stops at its first refusal
				r.send(1)
			}
			_ = returnsWithin(t, "the door on a stopped pool", r.wait)
			want = 0
			if d.offersWhenStopped {
				want = 3
			}
			if q, rj := c.queued.Load()-before, c.rejected.Load(); q != want || rj != want {
				t.Fatalf("3 tasks sent to a stopped pool: Queued %d, Rejected %d, want %d of each", q, rj, want)
			}
		})
	}
}

// TestWithHooksOptionsAddUp proves WithHooks' "several WithHooks options all apply, in the
// order given": two sets of hooks each see every task, the first before the second.
func TestWithHooksOptionsAddUp(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var order []string
	log := func(who string) crew.Hooks {
		add := func(event string) {
			mu.Lock()
			order = append(order, who+" "+event)
			mu.Unlock()
		}
		return crew.Hooks{
			Queued:   func(crew.TaskInfo) { add("queued") },
			Started:  func(crew.TaskInfo) { add("started") },
			Finished: func(crew.TaskInfo) { add("finished") },
			Rejected: func(error) { add("rejected") },
		}
	}
	p := crew.New(1, crew.WithHooks(log("first")), crew.WithHooks(log("second")))
	must(t, p.Submit(func() {}))
	p.StopAndWait()
	_ = p.Submit(func() {})
	want := []string{
		"first queued", "second queued", "first started", "second started",
		"first finished", "second finished",
		"first queued", "second queued", "first rejected", "second rejected",
	}
	if !slices.Equal(order, want) {
		t.Fatalf("hook calls %q, want %q", order, want)
	}
}

// misbehaviours are what a hook may do instead of returning.
var misbehaviours = []struct {
	name string
	do   func()
}{
	{"panic", func() { panic("hook") }},
	{"panic(nil)", func() { panic(nil) }},
	{"Goexit", runtime.Goexit},
}

// misbehaving returns hooks of which the one named misbehaves with do on its first call
// after armed is set, and counts its misbehaviours in fired.
func misbehaving(hook string, do func(), armed *atomic.Bool, fired *atomic.Int32) crew.Hooks {
	act := func() {
		if armed.CompareAndSwap(true, false) {
			fired.Add(1)
			do()
		}
	}
	var h crew.Hooks
	switch hook {
	case "Queued":
		h.Queued = func(crew.TaskInfo) { act() }
	case "Started":
		h.Started = func(crew.TaskInfo) { act() }
	case "Finished":
		h.Finished = func(crew.TaskInfo) { act() }
	case "Rejected":
		h.Rejected = func(error) { act() }
	}
	return h
}

// TestMisbehavingHookOnEachDoor proves Hooks' promises for a hook that panics (with a value or
// with nil) or calls runtime.Goexit, on every door: a panicking hook goes to the panic
// handler and its task runs exactly once; a Goexit in Queued or Rejected ends the submit, and
// the task never runs; a Goexit in Started keeps the task from running, and a door that
// reports a Goexit reports it once; a Goexit in Finished comes after the task ran and ended,
// so a future or a group call ends once, with the task's own result (it used to end twice:
// "sync: negative WaitGroup counter", or a group's Wait returning a Goexit error for a
// function that returned nil). Nothing waits for ever, and the pool goes on serving.
func TestMisbehavingHookOnEachDoor(t *testing.T) {
	t.Parallel()
	for _, d := range doors {
		for _, hook := range []string{"Queued", "Started", "Finished", "Rejected"} {
			for _, m := range misbehaviours {
				t.Run(d.name+"/"+hook+"/"+m.name, func(t *testing.T) {
					t.Parallel()
					testMisbehavingHook(t, d, hook, m.name, m.do)
				})
			}
		}
	}
}

func testMisbehavingHook(t *testing.T, d door, hook, misbehaviour string, do func()) {
	var armed atomic.Bool
	var fired, handled, ran atomic.Int32
	r := d.open(t, []crew.Option{
		crew.WithHooks(misbehaving(hook, do, &armed, &fired)),
		crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }),
	}, &ran)
	defer r.close()
	refused := hook == "Rejected"
	if refused {
		r.stop()
	}
	armed.Store(true)
	awaitReturn(t, "the send, or its goroutine's end", goRun(func() { r.send(1) }))
	err := returnsWithin(t, "the door's wait", r.wait)
	goexit := misbehaviour == "Goexit"
	if refused && !d.offersWhenStopped {
		if fired.Load() != 0 || ran.Load() != 0 {
			t.Fatalf("door refused before offering: hook fired %d times, task ran %d times", fired.Load(), ran.Load())
		}
		return
	}
	// A future's or a group's Wait may return before the Finished hook of its function has
	// run, and the panic handler after it.
	waitFor(t, "the hook to misbehave", func() bool { return fired.Load() > 0 })
	if !goexit {
		waitFor(t, "the panic handler", func() bool { return handled.Load() > 0 })
	}
	if fired.Load() != 1 {
		t.Fatalf("the %s hook misbehaved %d times, want once", hook, fired.Load())
	}
	wantRan := int32(1)
	if refused || (goexit && hook != "Finished") {
		wantRan = 0
	}
	if got := ran.Load(); got != wantRan {
		t.Fatalf("task ran %d times, want %d", got, wantRan)
	}
	switch {
	case !goexit:
		if got := handled.Load(); got != 1 {
			t.Fatalf("panic handler called %d times, want once", got)
		}
		if !refused && err != nil {
			t.Fatalf("wait = %v, want nil: a panicking hook does not touch its task", err)
		}
	case hook == "Finished":
		if err != nil {
			t.Fatalf("wait = %v, want nil: the task returned before its Finished hook called Goexit", err)
		}
	case hook == "Started" && d.reports, hook != "Finished" && d.group:
		if err == nil || !strings.Contains(err.Error(), "Goexit") {
			t.Fatalf("wait = %v, want an error naming Goexit", err)
		}
	}
	if refused {
		return
	}
	// The pool goes on serving. (A group's Wait may still return the error of before.)
	before := ran.Load()
	r.send(1)
	_ = returnsWithin(t, "a task after the misbehaviour", r.wait)
	if got := ran.Load() - before; got != 1 {
		t.Fatalf("a task sent after the misbehaviour ran %d times, want once", got)
	}
}

// TestGoexitInDiscardedHookStillFailsTheDroppedFunction: a Discarded hook that calls
// runtime.Goexit ends the submitter whose task took the dropped one's place, and nothing
// else: the dropped group function still fails with ErrDiscarded, so Wait returns.
func TestGoexitInDiscardedHookStillFailsTheDroppedFunction(t *testing.T) {
	t.Parallel()
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest),
		crew.WithHooks(crew.Hooks{Discarded: func(crew.TaskInfo) { runtime.Goexit() }}))
	defer p.StopAndWait()
	task, started, release := blocker()
	must(t, p.Submit(task))
	<-started
	g, _ := p.Group(context.Background())
	g.Go(func(context.Context) error { return nil }) // queued: the oldest
	awaitReturn(t, "the submit that drops the group's function", goRun(func() { _ = p.Submit(func() {}) }))
	close(release)
	if err := returnsWithin(t, "Group.Wait", g.Wait); !errors.Is(err, crew.ErrDiscarded) {
		t.Fatalf("Group.Wait = %v, want ErrDiscarded", err)
	}
}
