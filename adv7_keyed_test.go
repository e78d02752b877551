package crew_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/crewtest"
)

// adv7Rec records the order in which the tasks of each key ran, and whether two tasks of one
// key ever ran at once.
type adv7Rec struct {
	mu      sync.Mutex
	ran     map[string][]int
	busy    map[string]bool
	overlap int
}

func newAdv7Rec() *adv7Rec {
	return &adv7Rec{ran: map[string][]int{}, busy: map[string]bool{}}
}

// begin records the start of task seq of key.
func (r *adv7Rec) begin(key string, seq int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy[key] {
		r.overlap++
	}
	r.busy[key] = true
	r.ran[key] = append(r.ran[key], seq)
}

// end records the end of the running task of key.
func (r *adv7Rec) end(key string) {
	r.mu.Lock()
	r.busy[key] = false
	r.mu.Unlock()
}

// task returns a task of key numbered seq that records itself and then calls body, if any.
// The end is recorded in a defer, so that a body that panics or calls runtime.Goexit is
// recorded as ended too.
func (r *adv7Rec) task(key string, seq int, body func()) func() {
	return func() {
		r.begin(key, seq)
		defer r.end(key)
		if body != nil {
			body()
		}
	}
}

// check fails t unless each key in want ran tasks 0 to want[key]-1 in that order, one at a
// time, and no other key ran anything.
func (r *adv7Rec) check(t *testing.T, want map[string]int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.overlap != 0 {
		t.Errorf("%d times a task started while another of its key ran", r.overlap)
	}
	for key, n := range want {
		got := r.ran[key]
		ok := len(got) == n
		for i := 0; ok && i < n; i++ {
			ok = got[i] == i
		}
		if !ok {
			t.Errorf("key %s ran %v, want 0..%d in order", key, got, n-1)
		}
	}
	for key, got := range r.ran {
		if _, ok := want[key]; !ok {
			t.Errorf("key %s ran %v, want nothing", key, got)
		}
	}
}

// adv7Hooks counts what a pool's hooks see.
type adv7Hooks struct {
	queued, started, finished, panicked, rejected, discarded atomic.Int64

	mu     sync.Mutex
	errors []error
}

func (h *adv7Hooks) hooks() crew.Hooks {
	return crew.Hooks{
		Queued:  func(crew.TaskInfo) { h.queued.Add(1) },
		Started: func(crew.TaskInfo) { h.started.Add(1) },
		Finished: func(i crew.TaskInfo) {
			if i.Panicked {
				h.panicked.Add(1)
			}
			h.finished.Add(1)
		},
		Rejected: func(err error) {
			h.mu.Lock()
			h.errors = append(h.errors, err)
			h.mu.Unlock()
			h.rejected.Add(1)
		},
		Discarded: func(crew.TaskInfo) { h.discarded.Add(1) },
	}
}

// counts returns the counts as queued/started/finished/panicked/rejected/discarded.
func (h *adv7Hooks) counts() string {
	return fmt.Sprintf("%d/%d/%d/%d/%d/%d", h.queued.Load(), h.started.Load(), h.finished.Load(),
		h.panicked.Load(), h.rejected.Load(), h.discarded.Load())
}

// rejectedErrors returns the errors the Rejected hook was given.
func (h *adv7Hooks) rejectedErrors() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.errors)
}

// adv7Gate returns a task body that signals started and then blocks until release is
// called; release may be called more than once, so that a test defers it.
func adv7Gate() (body func(), started chan struct{}, release func()) {
	started = make(chan struct{}, 64)
	gate := make(chan struct{})
	return func() { started <- struct{}{}; <-gate }, started, sync.OnceFunc(func() { close(gate) })
}

// adv7NoErr reports err, if any, as a failure of t without ending the calling goroutine,
// which may be a worker.
func adv7NoErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("unexpected error: %v", err)
	}
}

// adv7Quiet reports whether nothing arrives on ch for d.
func adv7Quiet(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return false
	case <-time.After(d):
		return true
	}
}

// Keyed: "tasks with the same key run one at a time, in the order their submits took
// effect, while tasks with different keys run in parallel up to the pool's limit", and
// NewKeyed: p "may be a sub-pool". Keyeds on a root, on sub-pools of levels 1 and -1 and on a
// sub-pool of a sub-pool, fed by concurrent submitters (each owning its keys) with plain tasks
// of a higher level competing, keep every key's order and run each task exactly once.
func TestAdv7KeyedOrderUnderPrioritiesOnATree(t *testing.T) {
	root := crew.New(3)
	defer root.StopAndWait()
	hi := root.Sub(2, crew.WithPriority(1))
	lo := root.Sub(2, crew.WithPriority(-1))
	deep := lo.Sub(1, crew.WithPriority(2))
	pools := []*crew.Pool{root, hi, lo, deep}
	keyeds := make([]*crew.Keyed[string], len(pools))
	recs := make([]*adv7Rec, len(pools))
	for i, p := range pools {
		keyeds[i] = crew.NewKeyed[string](p)
		recs[i] = newAdv7Rec()
	}
	const callers, keysEach = 4, 3
	n := crewtest.Scale(120, 30)
	var seq [callers][keysEach]int
	var noise atomic.Int64
	together(callers, n, func(c, i int) {
		j := i % keysEach
		key := fmt.Sprintf("c%dk%d", c, j)
		for x, k := range keyeds {
			if err := k.Submit(key, recs[x].task(key, seq[c][j], nil)); err != nil {
				t.Errorf("Submit = %v", err)
			}
		}
		seq[c][j]++
		if i%4 == 0 {
			must(t, hi.Submit(func() { noise.Add(1) }))
		}
	})
	want := map[string]int{}
	for c := range callers {
		for j := range keysEach {
			want[fmt.Sprintf("c%dk%d", c, j)] = seq[c][j]
		}
	}
	for x, k := range keyeds {
		awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
		recs[x].check(t, want)
		total := uint64(callers * n)
		if s := k.Stats(); s.Accepted != total || s.Completed != total || s.Running != 0 || s.Waiting != 0 || s.Panicked != 0 {
			t.Errorf("Keyed %d Stats = %+v, want %d accepted and completed", x, s, total)
		}
	}
	awaitReturn(t, "root.Wait", goRun(root.Wait))
	if got, want := noise.Load(), int64(callers*((n+3)/4)); got != want {
		t.Errorf("%d plain tasks ran, want %d", got, want)
	}
}

// WithPriority: "no task of a higher level is waiting when a lower-level one starts", and
// Keyed: "a turn goes on to the key's next task only if the pool would start a task then
// (... with no task of a higher priority waiting)". A Keyed on a level -1 sub-pool of a
// sub-pool: a plain task of the middle pool (level 0 there) queued while a keyed task runs
// starts before the key's next task, though the key's turn holds the only slot.
func TestAdv7KeyedTurnYieldsToTheLevelAboveTwoPoolsDown(t *testing.T) {
	root := crew.New(1)
	defer root.StopAndWait()
	mid := root.Sub(1)
	low := mid.Sub(1, crew.WithPriority(-1))
	k := crew.NewKeyed[string](low)
	var mu sync.Mutex
	var order []string
	rec := func(s string) func() { return func() { mu.Lock(); order = append(order, s); mu.Unlock() } }
	body, started, release := adv7Gate()
	defer release()
	must(t, k.Submit("a", func() { rec("a0")(); body() }))
	crewtest.Recv(t, "a0 to start", started)
	must(t, k.Submit("a", rec("a1")))
	must(t, k.Submit("a", rec("a2")))
	must(t, mid.Submit(rec("MID")))
	release()
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	awaitReturn(t, "mid.Wait", goRun(mid.Wait))
	mu.Lock()
	defer mu.Unlock()
	if got := fmt.Sprint(order); got != "[a0 MID a1 a2]" {
		t.Errorf("start order %s, want [a0 MID a1 a2]: a level -1 keyed task started while a level-0 task waited", got)
	}
}

// Pool.Pause: "once Pause has returned, none starts", also of its sub-pools; Keyed: a turn
// goes on "not after Pool.Pause has returned"; Pool.Wait "does not return while tasks are
// queued on a paused pool"; Keyed.Stats: "Paused [is] the pool's"; Sub: "p's hooks ... see
// only p's own tasks". A root paused while the keys of a Keyed two sub-pools down run: no
// keyed task starts until Resume, Keyed.Wait and the root's Wait block meanwhile, and then
// every key resumes in order, each task seen once by the deep pool's hooks and never by the
// root's.
func TestAdv7KeyedPauseOfTheRootHoldsKeysTwoPoolsDown(t *testing.T) {
	var rootHooks, deepHooks adv7Hooks
	root := crew.New(2, crew.WithHooks(rootHooks.hooks()))
	defer root.StopAndWait()
	sub := root.Sub(2)
	deep := sub.Sub(2, crew.WithHooks(deepHooks.hooks()))
	k := crew.NewKeyed[string](deep)
	rec := newAdv7Rec()
	body, started, release := adv7Gate()
	defer release()
	for _, key := range []string{"a", "b"} {
		must(t, k.Submit(key, rec.task(key, 0, body)))
	}
	crewtest.Recv(t, "first task", started)
	crewtest.Recv(t, "second task", started)
	for i := 1; i <= 4; i++ {
		for _, key := range []string{"a", "b"} {
			must(t, k.Submit(key, rec.task(key, i, nil)))
		}
	}
	root.Pause()
	release()
	awaitStats(t, k, "the running keyed tasks to end", func(s crew.Stats) bool {
		return s.Running == 0 && s.Completed == 2
	})
	if s := k.Stats(); s.Waiting != 8 || s.Accepted != 10 || s.Paused || deep.Stats().Paused {
		t.Errorf("Keyed Stats on a paused root = %+v, want 8 waiting and Paused false, as the deep pool's", s)
	}
	kw, rw := goRun(k.Wait), goRun(root.Wait)
	stillBlocked(t, "Keyed.Wait with the root paused", kw)
	stillBlocked(t, "root.Wait with the root paused", rw)
	if n := deepHooks.started.Load(); n != 2 {
		t.Errorf("%d keyed tasks started on a paused root, want the 2 that started before", n)
	}
	root.Resume()
	awaitReturn(t, "Keyed.Wait", kw)
	awaitReturn(t, "root.Wait", rw)
	rec.check(t, map[string]int{"a": 5, "b": 5})
	if got := deepHooks.counts(); got != "10/10/10/0/0/0" {
		t.Errorf("deep pool's hooks counted %s, want 10/10/10/0/0/0", got)
	}
	if got := rootHooks.counts(); got != "0/0/0/0/0/0" {
		t.Errorf("root's hooks counted %s, want nothing: the keyed tasks are the deep pool's", got)
	}
}

// Pool.Resize: "no task starts while that many or more run"; "Growing starts queued tasks at
// once"; Sub: "Tasks of p and of all its sub-pools together never exceed p's limit"; Keyed:
// a turn goes on "not at a limit a Pool.Resize lowered". Four keys of a Keyed on a sub-pool
// run at once; the root shrinks to 1: no key's next task starts until all four running
// tasks have returned, and then only one at a time; growing back to 4 starts the other
// three keys' blocked tasks at once.
func TestAdv7KeyedShrinkAndGrowTheRootWhileKeysRun(t *testing.T) {
	root := crew.New(4)
	defer root.StopAndWait()
	sub := root.Sub(4)
	k := crew.NewKeyed[string](sub)
	rec := newAdv7Rec()
	first, started1, release1 := adv7Gate()
	defer release1()
	second, started2, release2 := adv7Gate()
	defer release2()
	var firstReturned, early atomic.Int32
	keys := []string{"a", "b", "c", "d"}
	for _, key := range keys {
		must(t, k.Submit(key, rec.task(key, 0, func() { first(); firstReturned.Add(1) })))
	}
	for range keys {
		crewtest.Recv(t, "a first task", started1)
	}
	for _, key := range keys {
		must(t, k.Submit(key, rec.task(key, 1, func() {
			if firstReturned.Load() != 4 {
				early.Add(1)
			}
			second()
		})))
		for i := 2; i < 5; i++ {
			must(t, k.Submit(key, rec.task(key, i, nil)))
		}
	}
	root.Resize(1)
	release1()
	crewtest.Recv(t, "one second task", started2)
	if !adv7Quiet(started2, 30*time.Millisecond) {
		t.Fatalf("a second keyed task started under a limit of 1 with one running; Stats %+v", k.Stats())
	}
	if s := k.Stats(); s.Running != 1 || s.Completed != 4 || s.Waiting != 15 {
		t.Errorf("Keyed Stats under a limit of 1 = %+v, want 1 running, 4 completed, 15 waiting", s)
	}
	root.Resize(4)
	for range 3 {
		crewtest.Recv(t, "the other second tasks after growing", started2)
	}
	release2()
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	if n := early.Load(); n != 0 {
		t.Errorf("%d keyed tasks started while the lowered limit was still taken by running tasks", n)
	}
	rec.check(t, map[string]int{"a": 5, "b": 5, "c": 5, "d": 5})
	if s := k.Stats(); s.Completed != 20 || s.Accepted != 20 {
		t.Errorf("Keyed Stats = %+v, want 20 accepted and completed", s)
	}
}

// Pool.StopNow: it "includes the tasks of the pool's sub-pools ... at any depth", "A Keyed
// on the pool keeps its order through StopNow: a key whose queued tasks StopNow hands back
// runs none of its tasks afterwards", and "Every accepted task either runs exactly once or
// is returned"; Stats.Returned: a sub-pool's worker taken out counts in the pool's Returned
// "and the sub-pool's task it carried in the sub-pool's Returned"; Keyed.Stats counts
// Returned per keyed task. A root's StopNow while a Keyed two sub-pools down has one key
// running and another queued hands the queued key's tasks back in order.
func TestAdv7KeyedStopNowOfTheRootWithKeysTwoPoolsDown(t *testing.T) {
	root := crew.New(1)
	defer root.StopAndWait()
	sub := root.Sub(2)
	deep := sub.Sub(2)
	k := crew.NewKeyed[string](deep)
	var mu sync.Mutex
	var log []string
	handingBack := false
	rec := func(s string) func() {
		return func() {
			mu.Lock()
			if handingBack {
				s = "back:" + s
			}
			log = append(log, s)
			mu.Unlock()
		}
	}
	body, started, release := adv7Gate()
	defer release()
	must(t, k.Submit("a", func() { rec("a0")(); body() }))
	crewtest.Recv(t, "a0", started)
	must(t, k.Submit("a", rec("a1")))
	must(t, k.Submit("b", rec("b0")))
	must(t, k.Submit("b", rec("b1")))
	must(t, k.Submit("c", rec("c0")))
	out := root.StopNow()
	mu.Lock()
	handingBack = true
	mu.Unlock()
	for _, f := range out {
		f()
	}
	mu.Lock()
	handingBack = false
	mu.Unlock()
	if err := k.Submit("d", rec("d0")); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("Submit after StopNow = %v, want ErrStopped", err)
	}
	if k.TrySubmit("a", rec("a9")) {
		t.Error("TrySubmit after StopNow = true")
	}
	release()
	awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	mu.Lock()
	got := fmt.Sprint(log)
	mu.Unlock()
	// a1 waited in the running turn of key a, never in a queue, and that turn was still
	// running its first task when StopNow returned: a1 runs afterwards. b and c waited in the
	// queues: b's turn in the root's, carried by a worker of sub carrying one of deep, c's in
	// deep's own, deep having reached its limit of 2.
	if want := "[a0 back:b0 back:b1 back:c0 a1]"; got != want {
		t.Errorf("log %s, want %s", got, want)
	}
	if s := k.Stats(); s.Returned != 3 || s.Completed != 2 || s.Accepted != 5 || s.Waiting != 0 || s.Running != 0 {
		t.Errorf("Keyed Stats = %+v, want 3 returned and 2 completed of 5", s)
	}
	rs, ss, ds := root.Stats(), sub.Stats(), deep.Stats()
	if rs.Returned != 1 || ss.Returned != 1 || ds.Returned != 2 {
		t.Errorf("Returned of root/sub/deep = %d/%d/%d, want 1/1/2: a worker of sub, a worker of deep, two turns",
			rs.Returned, ss.Returned, ds.Returned)
	}
	if ds.Accepted != ds.Completed+ds.Returned || ds.Running != 0 || ds.Waiting != 0 {
		t.Errorf("deep Stats = %+v, want every turn completed or returned", ds)
	}
}

// Pool.Shutdown: it "waits, like Pool.StopAndWait, for the accepted tasks to finish", Stop
// and Shutdown "resume the pool, since every accepted task must still run"; Keyed: "The
// pool's Pool.Wait, Pool.StopAndWait and Pool.Shutdown wait for accepted keyed tasks too".
// A paused root with keys queued on a Keyed of its sub-pool: Shutdown runs every keyed task
// in order and returns nil; with an ended context it returns the context's error at once,
// and the keyed tasks, plain ones carrying no context, still all run.
func TestAdv7KeyedShutdownWithKeysQueuedOnAPausedSubPool(t *testing.T) {
	for _, ended := range []bool{false, true} {
		t.Run(fmt.Sprintf("ended=%v", ended), func(t *testing.T) {
			root := crew.New(2)
			defer root.StopAndWait()
			sub := root.Sub(2)
			k := crew.NewKeyed[string](sub)
			rec := newAdv7Rec()
			body, started, release := adv7Gate()
			defer release()
			must(t, k.Submit("a", rec.task("a", 0, body)))
			crewtest.Recv(t, "a0", started)
			root.Pause()
			for i := range 6 {
				must(t, k.Submit("a", rec.task("a", i+1, nil)))
				must(t, k.Submit("b", rec.task("b", i, nil)))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if ended {
				cancel()
				err := returnsWithin(t, "Shutdown", func() error { return root.Shutdown(ctx) })
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Shutdown with an ended context and a task running = %v, want context.Canceled", err)
				}
				release()
				awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
			} else {
				done := goRun(func() {
					if err := root.Shutdown(ctx); err != nil {
						t.Errorf("Shutdown = %v, want nil", err)
					}
				})
				stillBlocked(t, "Shutdown with a keyed task running", done)
				release()
				awaitReturn(t, "Shutdown", done)
			}
			rec.check(t, map[string]int{"a": 7, "b": 6})
			if s := k.Stats(); s.Completed != 13 || s.Accepted != 13 || s.Waiting != 0 || s.Skipped != 0 {
				t.Errorf("Keyed Stats = %+v, want 13 completed", s)
			}
			if err := k.Submit("a", func() {}); !errors.Is(err, crew.ErrStopped) {
				t.Errorf("Submit after Shutdown = %v, want ErrStopped", err)
			}
		})
	}
}

// Keyed: "the pool's hooks (WithHooks) and latency histograms see each keyed task, not its
// turn"; Hooks.Finished is called "after the task returned, called runtime.Goexit or
// panicked"; Keyed.Stats counts "each keyed task counted once, whatever turns it took to
// run". Long backlogs of three keys, a quarter of the tasks panicking with nil and a quarter
// calling runtime.Goexit, run while the pool is paused, resumed and resized again and again,
// so that turns end early: the hooks and Keyed.Stats count each keyed task exactly once.
func TestAdv7KeyedHooksCountEachTaskOnceWhateverItsTurns(t *testing.T) {
	var h adv7Hooks
	var handled atomic.Int64
	p := crew.New(2, crew.WithHooks(h.hooks()), crew.WithLatencyHistograms(),
		crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }))
	defer p.StopAndWait()
	k := crew.NewKeyed[string](p)
	rec := newAdv7Rec()
	n := crewtest.Scale(60, 20)
	keys := []string{"a", "b", "c"}
	endChurn := crewtest.Churn(t, "the churn", func(i int) {
		switch i % 4 {
		case 0:
			p.Pause()
		case 1:
			p.Resize(1)
			p.Resume()
		case 2:
			p.Resize(2)
		}
		runtime.Gosched()
	})
	for i := range n {
		for _, key := range keys {
			must(t, k.Submit(key, rec.task(key, i, crewtest.Mix(i))))
		}
	}
	endChurn()
	p.Resume()
	p.Resize(2)
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	awaitReturn(t, "Pool.Wait", goRun(p.Wait))
	rec.check(t, map[string]int{"a": n, "b": n, "c": n})
	total := int64(len(keys) * n)
	panics := int64(len(keys) * ((n + 2) / 4))
	want := fmt.Sprintf("%d/%d/%d/%d/0/0", total, total, total, panics)
	if got := h.counts(); got != want {
		t.Errorf("hooks counted queued/started/finished/panicked/rejected/discarded %s, want %s", got, want)
	}
	if handled.Load() != panics {
		t.Errorf("panic handler called %d times, want %d", handled.Load(), panics)
	}
	ks := k.Stats()
	if ks.Accepted != uint64(total) || ks.Panicked != uint64(panics) || ks.Completed != uint64(total-panics) {
		t.Errorf("Keyed Stats = %+v, want %d accepted, %d panicked", ks, total, panics)
	}
	ps := p.Stats()
	if ps.WaitTime.Count != uint64(total) || ps.RunTime.Count != uint64(total) {
		t.Errorf("pool histograms count %d/%d, want %d keyed tasks each", ps.WaitTime.Count, ps.RunTime.Count, total)
	}
	if ps.Panicked != 0 || ps.Accepted != ps.Completed || ps.Accepted < 3 || ps.Accepted > uint64(total) {
		t.Errorf("pool Stats = %+v, want its turns (3 to %d) all completed, none panicked", ps, total)
	}
}

// Keyed: "The pool's Stats count turns, not keyed tasks: a turn counts once in Accepted and
// Waiting while it waits, once in Running while it runs"; Keyed.Stats: "MaxWorkers and
// Paused are the pool's; Idle, CallerRan and Skipped are 0 ... and the histograms are nil",
// "Once k is idle, Accepted equals Completed + Panicked + Discarded + Returned". Snapshots
// with three keys running and a fourth queued compare exactly, while running, paused and
// idle.
func TestAdv7KeyedStatsAgainstPoolStats(t *testing.T) {
	p := crew.New(3, crew.WithLatencyHistograms())
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	body, started, release := adv7Gate()
	defer release()
	for key := range 3 {
		must(t, k.Submit(key, body))
	}
	for range 3 {
		crewtest.Recv(t, "a keyed task", started)
	}
	for key := range 4 {
		for range 2 {
			must(t, k.Submit(key, func() {}))
		}
	}
	must(t, k.Submit(3, func() {}))
	want := crew.Stats{MaxWorkers: 3, Running: 3, Waiting: 9, Accepted: 12}
	if got := k.Stats(); got != want {
		t.Errorf("Keyed Stats = %+v, want %+v", got, want)
	}
	ps := p.Stats()
	if ps.Running != 3 || ps.Waiting != 1 || ps.Accepted != 4 || ps.Idle != 0 {
		t.Errorf("pool Stats = %+v, want 3 turns running and 1 waiting", ps)
	}
	p.Pause()
	want.Paused = true
	if got := k.Stats(); got != want {
		t.Errorf("Keyed Stats of a paused pool = %+v, want %+v", got, want)
	}
	p.Resize(5)
	want.MaxWorkers = 5
	if got := k.Stats(); got != want {
		t.Errorf("Keyed Stats after Resize(5) = %+v, want %+v", got, want)
	}
	p.Resume()
	release()
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	awaitReturn(t, "Pool.Wait", goRun(p.Wait))
	want = crew.Stats{MaxWorkers: 5, Accepted: 12, Completed: 12}
	if got := k.Stats(); got != want {
		t.Errorf("idle Keyed Stats = %+v, want %+v", got, want)
	}
	ps = p.Stats()
	if ps.Accepted != ps.Completed || ps.Running != 0 || ps.Waiting != 0 || ps.Panicked != 0 || ps.Accepted < 4 || ps.Accepted > 12 {
		t.Errorf("idle pool Stats = %+v, want 4 to 12 turns, all completed", ps)
	}
	if ps.WaitTime.Count != 12 || ps.RunTime.Count != 12 {
		t.Errorf("pool histograms count %d/%d, want the 12 keyed tasks", ps.WaitTime.Count, ps.RunTime.Count)
	}
}

// CallerRuns: "A task that submits into its own full pool runs the new task itself instead
// of deadlocking"; Keyed.Stats: keyed tasks "never run on their submitter"; Keyed: "tasks
// with the same key run one at a time". A keyed task on a full CallerRuns pool runs a plain
// task it submits itself, but a task it submits to its own key waits for it to return; and
// a keyed submit from outside to the full pool returns at once without running its task.
func TestAdv7KeyedOnACallerRunsPool(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	defer p.StopAndWait()
	k := crew.NewKeyed[string](p)
	var mu sync.Mutex
	var log []string
	rec := func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	var a0Returned atomic.Bool
	must(t, k.Submit("a", func() {
		rec("a0")
		adv7NoErr(t, p.Submit(func() { rec("p1") })) // queued: the queue had room
		adv7NoErr(t, p.Submit(func() { rec("p2") })) // full: runs here
		adv7NoErr(t, k.Submit("a", func() {
			if !a0Returned.Load() {
				rec("a1-inside-a0")
			}
			rec("a1")
		}))
		rec("a0-end")
		a0Returned.Store(true)
	}))
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	awaitReturn(t, "Pool.Wait", goRun(p.Wait))
	mu.Lock()
	got := slices.Clone(log)
	mu.Unlock()
	if len(got) != 5 || fmt.Sprint(got[:3]) != "[a0 p2 a0-end]" || !slices.Contains(got[3:], "a1") || !slices.Contains(got[3:], "p1") {
		t.Errorf("log %v, want [a0 p2 a0-end] then a1 and p1", got)
	}
	if ps := p.Stats(); ps.CallerRan != 1 {
		t.Errorf("pool CallerRan = %d, want 1 (the plain task)", ps.CallerRan)
	}
	if ks := k.Stats(); ks.CallerRan != 0 || ks.Completed != 2 {
		t.Errorf("Keyed Stats = %+v, want 2 completed, none caller-ran", ks)
	}

	// From outside: the worker held, the queue full.
	// One blocker at a time: a second submitted before the worker took the first would find
	// the queue full and run on this goroutine.
	body, started, release := adv7Gate()
	defer release()
	must(t, p.Submit(body))
	crewtest.Recv(t, "the blocker", started)
	must(t, p.Submit(body))
	var ran atomic.Bool
	err := returnsWithin(t, "keyed Submit to a full CallerRuns pool", func() error {
		return k.Submit("b", func() { ran.Store(true) })
	})
	if err != nil || ran.Load() {
		t.Errorf("keyed Submit to a full CallerRuns pool = %v, ran on its submitter %v; want nil, false", err, ran.Load())
	}
	release()
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	if !ran.Load() {
		t.Error("the keyed task never ran")
	}
	if ps := p.Stats(); ps.CallerRan != 1 {
		t.Errorf("pool CallerRan = %d, want still 1", ps.CallerRan)
	}
}

// DiscardOldest on a sub-pool under a Keyed: Keyed: a turn counts "once in ... Discarded
// when ... DiscardOldest takes it out with the keyed tasks it was to run"; Keyed.Stats:
// Discarded counts "those DiscardOldest dropped with their key's turn (they went to the
// discard handler)"; Hooks.Discarded "Started and Finished are never called for it". The
// dropped key's tasks reach the handler in order, each once, and a later task of the key
// runs on a new turn.
func TestAdv7KeyedDiscardOldestOnASubPoolDropsAWholeTurn(t *testing.T) {
	var h adv7Hooks
	var mu sync.Mutex
	var log []string
	inHandler := false
	rec := func(s string) func() {
		return func() {
			mu.Lock()
			if inHandler {
				s = "dropped:" + s
			}
			log = append(log, s)
			mu.Unlock()
		}
	}
	root := crew.New(2)
	defer root.StopAndWait()
	sub := root.Sub(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest), crew.WithHooks(h.hooks()),
		crew.WithDiscardHandler(func(v any) {
			mu.Lock()
			inHandler = true
			mu.Unlock()
			v.(func())()
			mu.Lock()
			inHandler = false
			mu.Unlock()
		}))
	k := crew.NewKeyed[string](sub)
	release := holdWorkers(t, plainPool{sub}, 1, 0)
	for i := range 3 {
		must(t, k.Submit("a", rec(fmt.Sprint("a", i))))
	}
	if ks, ss := k.Stats(), sub.Stats(); ks.Waiting != 3 || ss.Waiting != 1 {
		t.Fatalf("Keyed Stats %+v, sub Stats %+v: want 3 keyed tasks in one waiting turn", ks, ss)
	}
	must(t, sub.Submit(rec("p")))
	must(t, k.Submit("a", rec("a3")))
	release()
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	awaitReturn(t, "sub.Wait", goRun(sub.Wait))
	mu.Lock()
	got := slices.Clone(log)
	mu.Unlock()
	if len(got) != 5 || fmt.Sprint(got[:3]) != "[dropped:a0 dropped:a1 dropped:a2]" ||
		!slices.Contains(got[3:], "p") || !slices.Contains(got[3:], "a3") {
		t.Errorf("log %v, want a0..a2 dropped in order, then p and a3 run", got)
	}
	if ks := k.Stats(); ks.Discarded != 3 || ks.Completed != 1 || ks.Accepted != 4 {
		t.Errorf("Keyed Stats = %+v, want 3 discarded, 1 completed of 4", ks)
	}
	if ss := sub.Stats(); ss.Discarded != 1 || ss.Accepted != 4 || ss.Completed != 3 {
		t.Errorf("sub Stats = %+v, want 1 turn discarded; the held task, p and a3's turn completed", ss)
	}
	// Queued: the held task, four keyed tasks, p. Started and Finished: held, p, a3.
	if got := h.counts(); got != "6/3/3/0/0/3" {
		t.Errorf("sub hooks counted %s, want 6/3/3/0/0/3", got)
	}
}

// Keyed.SubmitContext: "If ctx has already ended, it returns that error at once without
// accepting the task", and on a full queue "gives up waiting for room ... when ctx ends. It
// then returns an error that matches ctx.Err()"; Keyed.Stats: Canceled counts "the submits
// ... ended by their context"; Hooks.Rejected gets "the error of a submit whose context ended
// first". An ended context, a deadline that passes while blocked and a cancel cause that
// comes while blocked, on bounded and unbounded Keyeds of one pool; and, per the package
// documentation, "every call that takes a context when given a nil one" panics.
func TestAdv7KeyedSubmitContextEndedAndEnding(t *testing.T) {
	var h adv7Hooks
	p := crew.New(1, crew.WithHooks(h.hooks()))
	defer p.StopAndWait()
	bounded := crew.NewKeyed[string](p, crew.WithQueueSize(1))
	open := crew.NewKeyed[string](p)
	var ran atomic.Int32
	never := func() { ran.Add(1) }
	body, started, release := adv7Gate()
	defer release()
	must(t, bounded.Submit("a", body))
	crewtest.Recv(t, "a0", started)
	must(t, bounded.Submit("b", func() {}))

	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := open.SubmitContext(ended, "x", never); !errors.Is(err, context.Canceled) {
		t.Errorf("unbounded SubmitContext with an ended ctx = %v, want context.Canceled", err)
	}
	if err := bounded.SubmitContext(ended, "b", never); !errors.Is(err, context.Canceled) {
		t.Errorf("bounded SubmitContext with an ended ctx = %v, want context.Canceled", err)
	}
	dl, cancelDL := context.WithTimeout(context.Background(), 15*time.Millisecond)
	defer cancelDL()
	err := returnsWithin(t, "SubmitContext with a deadline", func() error { return bounded.SubmitContext(dl, "c", never) })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("SubmitContext past its deadline = %v, want context.DeadlineExceeded", err)
	}
	cc, cancelCause := context.WithCancelCause(context.Background())
	done := goRun(func() {
		if err := bounded.SubmitContext(cc, "d", never); !errors.Is(err, context.Canceled) {
			t.Errorf("SubmitContext canceled with a cause = %v, want context.Canceled", err)
		}
	})
	stillBlocked(t, "SubmitContext on a full Keyed", done)
	cancelCause(errors.New("enough"))
	awaitReturn(t, "SubmitContext canceled while blocked", done)

	var nilCtx context.Context
	func() {
		defer func() {
			if v := recover(); !strings.Contains(fmt.Sprint(v), "SubmitContext") {
				t.Errorf("SubmitContext with a nil ctx panicked with %v, want a message naming the call", v)
			}
		}()
		_ = open.SubmitContext(nilCtx, "x", never)
	}()

	release()
	awaitReturn(t, "Keyed.Wait", goRun(bounded.Wait))
	awaitReturn(t, "Keyed.Wait", goRun(open.Wait))
	if ran.Load() != 0 {
		t.Errorf("%d tasks of canceled submits ran", ran.Load())
	}
	if s := open.Stats(); s.Canceled != 1 || s.Accepted != 0 || s.Rejected != 0 {
		t.Errorf("unbounded Keyed Stats = %+v, want 1 canceled, nothing accepted", s)
	}
	if s := bounded.Stats(); s.Canceled != 3 || s.Accepted != 2 || s.Completed != 2 || s.Rejected != 0 {
		t.Errorf("bounded Keyed Stats = %+v, want 3 canceled, 2 accepted and completed", s)
	}
	errs := h.rejectedErrors()
	if len(errs) != 4 {
		t.Fatalf("Rejected hook got %v, want 4 errors", errs)
	}
	for i, e := range errs {
		if !errors.Is(e, context.Canceled) && !errors.Is(e, context.DeadlineExceeded) {
			t.Errorf("Rejected hook error %d = %v, want a context's error", i, e)
		}
	}
}

// Keyed.Submit: "A panic in the task goes to the pool's panic handler ...; the key's next
// task still runs, as it does after a task that calls runtime.Goexit"; Sub: a sub-pool has
// "p's panic handler" by default; Stats.Completed counts tasks that "returned (or called
// runtime.Goexit)". On a Keyed of a sub-pool of a sub-pool that inherits its parent's
// handler, panics, panic(nil) and runtime.Goexit never wedge a key or lose a count.
func TestAdv7KeyedPanicsAndGoexitOnASubSubPool(t *testing.T) {
	var mu sync.Mutex
	var values []any
	var h adv7Hooks
	root := crew.New(2)
	defer root.StopAndWait()
	sub := root.Sub(2, crew.WithPanicHandler(func(v any, _ []byte) { mu.Lock(); values = append(values, v); mu.Unlock() }))
	deep := sub.Sub(2, crew.WithHooks(h.hooks()))
	k := crew.NewKeyed[string](deep)
	rec := newAdv7Rec()
	bodies := []func(){
		nil,
		func() { panic("boom") },
		func() { panic(nil) },
		runtime.Goexit,
		nil,
		runtime.Goexit,
		func() { panic(nil) },
		nil,
	}
	for i, b := range bodies {
		for _, key := range []string{"a", "b"} {
			must(t, k.Submit(key, rec.task(key, i, b)))
		}
	}
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	rec.check(t, map[string]int{"a": 8, "b": 8})
	if s := k.Stats(); s.Panicked != 6 || s.Completed != 10 || s.Accepted != 16 {
		t.Errorf("Keyed Stats = %+v, want 6 panicked and 10 completed", s)
	}
	if got := h.counts(); got != "16/16/16/6/0/0" {
		t.Errorf("deep hooks counted %s, want 16/16/16/6/0/0", got)
	}
	mu.Lock()
	defer mu.Unlock()
	booms, nils := 0, 0
	for _, v := range values {
		var pn *runtime.PanicNilError
		switch {
		case v == "boom":
			booms++
		case v == nil, errors.As(asError(v), &pn):
			nils++
		default:
			t.Errorf("panic handler got %v", v)
		}
	}
	if booms != 2 || nils != 4 {
		t.Errorf("panic handler got %d booms and %d nil panics (%v), want 2 and 4", booms, nils, values)
	}
}

// asError returns v as an error, or nil if it is none.
func asError(v any) error {
	err, _ := v.(error)
	return err
}

// Keyed: "Per key, the return of a task synchronizes before the start of the next one";
// Keyed.Submit: it "blocks only while the Keyed's bounded queue is full". A keyed task that
// submits to its own key is accepted at once and its new task starts only after it has
// returned. On a bounded Keyed whose queue the key itself fills, the room can only come
// from a task that waits behind the submitter: TrySubmit reports false and a SubmitContext
// waits until its context ends (a plain Submit there would wait for another key's task to
// start; nothing in the documentation lets it run the task itself).
func TestAdv7KeyedTaskSubmitsToItsOwnKey(t *testing.T) {
	root := crew.New(2)
	defer root.StopAndWait()
	sub := root.Sub(2)
	k := crew.NewKeyed[string](sub)
	var returned atomic.Bool
	var order []string // written by tasks of one key only
	var early atomic.Bool
	must(t, k.Submit("a", func() {
		order = append(order, "a0")
		if err := k.Submit("a", func() {
			if !returned.Load() {
				early.Store(true)
			}
			order = append(order, "a1")
		}); err != nil {
			t.Errorf("Submit from a task to its own key = %v", err)
		}
		if !k.TrySubmit("a", func() { order = append(order, "a2") }) {
			t.Error("TrySubmit from a task to its own key = false")
		}
		if s := k.Stats(); s.Running != 1 || s.Waiting != 2 {
			t.Errorf("Keyed Stats from the task = %+v, want 1 running, 2 waiting", s)
		}
		time.Sleep(2 * time.Millisecond)
		order = append(order, "a0-end")
		returned.Store(true)
	}))
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	if early.Load() || fmt.Sprint(order) != "[a0 a0-end a1 a2]" {
		t.Errorf("order %v, want [a0 a0-end a1 a2]", order)
	}

	bk := crew.NewKeyed[string](sub, crew.WithQueueSize(1))
	var tried atomic.Bool
	var ctxErr error
	must(t, bk.Submit("x", func() {
		adv7NoErr(t, bk.Submit("x", func() {}))
		tried.Store(bk.TrySubmit("x", func() {}))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		ctxErr = bk.SubmitContext(ctx, "x", func() {})
	}))
	awaitReturn(t, "bounded Keyed.Wait", goRun(bk.Wait))
	if tried.Load() || !errors.Is(ctxErr, context.DeadlineExceeded) {
		t.Errorf("into its own full key: TrySubmit = %v, SubmitContext = %v; want false and DeadlineExceeded", tried.Load(), ctxErr)
	}
	if s := bk.Stats(); s.Accepted != 2 || s.Completed != 2 || s.Rejected != 1 || s.Canceled != 1 {
		t.Errorf("bounded Keyed Stats = %+v, want 2 completed, 1 rejected, 1 canceled", s)
	}
}

// Keyed.Wait: "Calling Wait from a task of k never returns" - said of k's own tasks only.
// A task of one Keyed waits with Wait for another Keyed on the same pool (which has a free
// worker), and with Keyed.Stats from inside; both return, and each Wait sees the other's
// task finished, "The return of each task synchronizes before the return of the Wait call".
func TestAdv7KeyedTaskWaitsForAnotherKeyed(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	k1 := crew.NewKeyed[int](p)
	k2 := crew.NewKeyed[string](p.Sub(1))
	var shared int // written by k2's task, read after k2.Wait
	var seen int
	must(t, k1.Submit(1, func() {
		adv7NoErr(t, k2.Submit("x", func() { time.Sleep(time.Millisecond); shared = 42 }))
		k2.Wait()
		seen = shared
		if s := k1.Stats(); s.Running != 1 {
			t.Errorf("k1 Stats from its task = %+v, want 1 running", s)
		}
	}))
	awaitReturn(t, "k1.Wait", goRun(k1.Wait))
	if seen != 42 {
		t.Errorf("the k1 task saw %d after k2.Wait, want 42", seen)
	}
}

// NewKeyed: "with WithQueueSize(n), n accepted tasks may wait ..., and the next submit blocks
// until one starts, or returns ErrQueueFull under WithNonBlocking", "It panics if ... another
// option sets anything: the pool's options decide everything else"; Keyed: "The pool's
// WithQueueSize does not bound keyed tasks; NewKeyed's own WithQueueSize does". On a pool
// with WithQueueSize(1), WithMaxWait and WithMaxBlocked(1): a keyed submit blocked on the
// Keyed's own bound is not cut short by the pool's MaxWait nor refused by its MaxBlocked (the
// Keyed's wait is its own), three such submitters wait at once, and all are accepted once
// room frees; meanwhile a plain submit to the pool's full queue gets ErrQueueFull after the
// pool's MaxWait; and NewKeyed refuses both options.
func TestAdv7KeyedBoundIgnoresThePoolsMaxWaitAndMaxBlocked(t *testing.T) {
	for _, opt := range []crew.Option{crew.WithMaxWait(time.Millisecond), crew.WithMaxBlocked(1)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("NewKeyed with a pool-only overflow option did not panic")
				}
			}()
			p := crew.New(1)
			defer p.StopAndWait()
			crew.NewKeyed[int](p, crew.WithQueueSize(1), opt)
		}()
	}
	const maxWait = 5 * time.Millisecond
	var h adv7Hooks
	p := crew.New(1, crew.WithQueueSize(1), crew.WithMaxWait(maxWait), crew.WithMaxBlocked(1), crew.WithHooks(h.hooks()))
	defer p.StopAndWait()
	k := crew.NewKeyed[string](p, crew.WithQueueSize(1))
	body, started, release := adv7Gate()
	defer release()
	must(t, k.Submit("a", body))
	crewtest.Recv(t, "a0", started)
	must(t, k.Submit("b", func() {}))
	var ran atomic.Int32
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = k.Submit(fmt.Sprint("c", i), func() { ran.Add(1) })
		}()
	}
	all := goRun(wg.Wait)
	waitFor(t, "three keyed submitters to offer their tasks", func() bool { return h.queued.Load() == 5 })
	stillBlocked(t, "keyed submitters past the pool's MaxWait", all)
	if n := crew.BlockedSubmitters(p); n != 0 {
		t.Errorf("pool counts %d blocked submitters; the keyed ones wait on the Keyed's bound", n)
	}
	// The pool's own queue holds b's turn, so it is full for a plain submit.
	begin := time.Now()
	if err := p.Submit(func() {}); !errors.Is(err, crew.ErrQueueFull) {
		t.Errorf("plain Submit to the full pool queue = %v, want ErrQueueFull after MaxWait", err)
	} else if d := time.Since(begin); d < maxWait {
		t.Errorf("plain Submit gave up after %v, before the pool's MaxWait of %v", d, maxWait)
	}
	release()
	awaitReturn(t, "the blocked keyed submitters", all)
	for i, err := range errs {
		if err != nil {
			t.Errorf("blocked keyed submit %d = %v, want nil", i, err)
		}
	}
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	if ran.Load() != 3 {
		t.Errorf("%d of the 3 blocked keyed tasks ran", ran.Load())
	}
	if s := k.Stats(); s.Rejected != 0 || s.Accepted != 5 || s.Completed != 5 {
		t.Errorf("Keyed Stats = %+v, want 5 accepted and completed, none rejected", s)
	}
	if s := p.Stats(); s.Rejected != 1 {
		t.Errorf("pool Rejected = %d, want 1 (the plain submit)", s.Rejected)
	}
	if errs := h.rejectedErrors(); len(errs) != 1 || !errors.Is(errs[0], crew.ErrQueueFull) {
		t.Errorf("Rejected hook got %v, want only the plain submit's ErrQueueFull", errs)
	}
}

// Keyed.Submit: "After the pool is stopped it returns ErrStopped"; Pool.Shutdown: "if ctx
// ends first it returns ctx.Err() ... Plain tasks, which carry no context, still run";
// Hooks.Rejected gets ErrStopped; Keyed.Stats: Rejected and Canceled count only "the
// submits refused by k's full bounded queue or ended by their context". A root's Shutdown
// with an ended context while submitters block on the bound of a Keyed two sub-pools down:
// they return ErrStopped, counted by no Keyed counter, and the accepted keyed tasks run.
func TestAdv7KeyedShutdownFreesSubmittersBlockedTwoPoolsDown(t *testing.T) {
	var h adv7Hooks
	root := crew.New(1)
	defer root.StopAndWait()
	deep := root.Sub(1).Sub(1, crew.WithHooks(h.hooks()))
	k := crew.NewKeyed[string](deep, crew.WithQueueSize(1))
	body, started, release := adv7Gate()
	defer release()
	must(t, k.Submit("a", body))
	crewtest.Recv(t, "a0", started)
	var ranB, ranLate atomic.Int32
	must(t, k.Submit("b", func() { ranB.Add(1) }))
	late := func() { ranLate.Add(1) }
	var e1, e2 error
	d1 := goRun(func() { e1 = k.Submit("c", late) })
	d2 := goRun(func() { e2 = k.SubmitContext(context.Background(), "b", late) })
	stillBlocked(t, "Submit on a full Keyed", d1)
	stillBlocked(t, "SubmitContext on a full Keyed", d2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := returnsWithin(t, "Shutdown", func() error { return root.Shutdown(ctx) }); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown with an ended context and a task running = %v, want context.Canceled", err)
	}
	awaitReturn(t, "blocked Submit", d1)
	awaitReturn(t, "blocked SubmitContext", d2)
	if !errors.Is(e1, crew.ErrStopped) || !errors.Is(e2, crew.ErrStopped) {
		t.Errorf("blocked submits returned %v and %v, want ErrStopped", e1, e2)
	}
	release()
	awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))
	if ranB.Load() != 1 || ranLate.Load() != 0 {
		t.Errorf("b ran %d times, the refused tasks %d; want 1 and 0", ranB.Load(), ranLate.Load())
	}
	if s := k.Stats(); s.Accepted != 2 || s.Completed != 2 || s.Rejected != 0 || s.Canceled != 0 {
		t.Errorf("Keyed Stats = %+v, want 2 completed and no refusal counted", s)
	}
	errs := h.rejectedErrors()
	if len(errs) != 2 || !errors.Is(errs[0], crew.ErrStopped) || !errors.Is(errs[1], crew.ErrStopped) {
		t.Errorf("Rejected hook got %v, want ErrStopped twice", errs)
	}
}

// Keyed.Submit: "for a nil task, ErrNilTask", "After the pool is stopped it returns
// ErrStopped"; TrySubmit "returns false when ... the pool is stopped or task is nil";
// Hooks.Rejected "is not called for ErrNilTask"; Pool.Stop of a sub-pool "leaves p and its
// other sub-pools working". A Keyed on a stopped sub-pool of a sub-pool refuses, the root's
// Keyed keeps going, and the hooks count the refusals as the doc says.
func TestAdv7KeyedRefusalsOnAStoppedSubSubPool(t *testing.T) {
	var h adv7Hooks
	root := crew.New(2)
	defer root.StopAndWait()
	mid := root.Sub(2)
	deep := mid.Sub(1, crew.WithHooks(h.hooks()))
	k := crew.NewKeyed[string](deep)
	rk := crew.NewKeyed[string](root)
	if err := k.Submit("a", nil); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("Submit(nil) = %v, want ErrNilTask", err)
	}
	if err := k.SubmitContext(context.Background(), "a", nil); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("SubmitContext(nil) = %v, want ErrNilTask", err)
	}
	if k.TrySubmit("a", nil) {
		t.Error("TrySubmit(nil) = true")
	}
	body, started, release := adv7Gate()
	defer release()
	must(t, k.Submit("a", body))
	crewtest.Recv(t, "a0", started)
	var ranA1 atomic.Int32
	must(t, k.Submit("a", func() { ranA1.Add(1) }))
	mid.Stop()
	never := func() { t.Error("a refused keyed task ran") }
	if err := k.Submit("a", never); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("Submit to a Keyed on a stopped pool = %v, want ErrStopped", err)
	}
	if k.TrySubmit("b", never) {
		t.Error("TrySubmit to a Keyed on a stopped pool = true")
	}
	if err := k.SubmitContext(context.Background(), "b", never); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("SubmitContext to a Keyed on a stopped pool = %v, want ErrStopped", err)
	}
	var ranRoot atomic.Int32
	must(t, rk.Submit("r", func() { ranRoot.Add(1) }))
	awaitReturn(t, "root Keyed.Wait", goRun(rk.Wait))
	release()
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	if ranA1.Load() != 1 || ranRoot.Load() != 1 {
		t.Errorf("accepted a1 ran %d times, the root's keyed task %d; want 1 and 1", ranA1.Load(), ranRoot.Load())
	}
	if s := k.Stats(); s.Accepted != 2 || s.Completed != 2 || s.Rejected != 0 {
		t.Errorf("Keyed Stats = %+v, want 2 accepted and completed, no Rejected for ErrStopped", s)
	}
	// Queued: a0, a1 and the three refused; nil tasks are no tasks offered.
	if got := h.counts(); got != "5/2/2/0/3/0" {
		t.Errorf("deep hooks counted %s, want 5/2/2/0/3/0", got)
	}
	for _, err := range h.rejectedErrors() {
		if !errors.Is(err, crew.ErrStopped) {
			t.Errorf("Rejected hook got %v, want ErrStopped", err)
		}
	}
}

// Sub: "p's hooks and latency histograms see only p's own tasks", and "The sub-pool's Stats
// count its tasks themselves"; Keyed: the pool's hooks and histograms "see each keyed task,
// not its turn". Keyed tasks of a sub-pool with hooks and histograms are seen there once
// each, and never by the root's hooks and histograms, which see the root's own keyed tasks.
func TestAdv7KeyedHooksAndHistogramsBelongToTheKeyedsPool(t *testing.T) {
	var rh, sh adv7Hooks
	root := crew.New(2, crew.WithHooks(rh.hooks()), crew.WithLatencyHistograms())
	defer root.StopAndWait()
	sub := root.Sub(2, crew.WithHooks(sh.hooks()), crew.WithLatencyHistograms())
	ks := crew.NewKeyed[int](sub)
	kr := crew.NewKeyed[int](root)
	n := crewtest.Scale(40, 12)
	for i := range n {
		must(t, ks.Submit(i%3, func() {}))
		if i%2 == 0 {
			must(t, kr.Submit(i%5, func() {}))
		}
	}
	awaitReturn(t, "sub Keyed.Wait", goRun(ks.Wait))
	awaitReturn(t, "root Keyed.Wait", goRun(kr.Wait))
	nr := (n + 1) / 2
	if got, want := sh.counts(), fmt.Sprintf("%d/%d/%d/0/0/0", n, n, n); got != want {
		t.Errorf("sub hooks counted %s, want %s", got, want)
	}
	if got, want := rh.counts(), fmt.Sprintf("%d/%d/%d/0/0/0", nr, nr, nr); got != want {
		t.Errorf("root hooks counted %s, want %s (the root's keyed tasks only)", got, want)
	}
	if s := sub.Stats(); s.WaitTime.Count != uint64(n) || s.RunTime.Count != uint64(n) {
		t.Errorf("sub histograms count %d/%d, want %d", s.WaitTime.Count, s.RunTime.Count, n)
	}
	if s := root.Stats(); s.WaitTime.Count != uint64(nr) || s.RunTime.Count != uint64(nr) {
		t.Errorf("root histograms count %d/%d, want %d", s.WaitTime.Count, s.RunTime.Count, nr)
	}
	if s := ks.Stats(); s.WaitTime != nil || s.RunTime != nil {
		t.Errorf("Keyed Stats histograms = %v/%v, want nil", s.WaitTime, s.RunTime)
	}
}

// Pool.StopNow: "Every accepted task either runs exactly once or is returned ..., never
// both", the tasks handed back come "in the order they would have started", and "a key whose
// queued tasks StopNow hands back runs none of its tasks afterwards". Submitters race a
// StopNow of the root while the Keyed sits on a leveled sub-pool of a paused-and-resumed
// root: per key, the tasks that ran are a prefix of its submits and the handed-back ones the
// rest, in order.
func TestAdv7KeyedStopNowRacingSubmitsKeepsEveryKeyAPrefix(t *testing.T) {
	rounds := crewtest.Scale(20, 5)
	for r := range rounds {
		root := crew.New(2)
		sub := root.Sub(2, crew.WithPriority(1))
		k := crew.NewKeyed[int](sub)
		const callers, each = 3, 40
		var mu sync.Mutex
		ran := map[int][]int{}
		var accepted [callers][]int
		task := func(key, seq int) func() {
			return func() { mu.Lock(); ran[key] = append(ran[key], seq); mu.Unlock() }
		}
		var out []func()
		start := make(chan struct{})
		var wg sync.WaitGroup
		crewtest.Spawn(&wg, callers, start, func(c int) {
			for i := range each {
				if err := k.Submit(c, task(c, i)); err == nil {
					accepted[c] = append(accepted[c], i)
				} else if !errors.Is(err, crew.ErrStopped) {
					t.Errorf("Submit = %v", err)
				}
				if i == each/3 && c == 0 {
					root.Pause()
				}
				if i == each/2 && c == 1 {
					root.Resume()
				}
			}
		})
		stopper := goRun(func() {
			<-start
			for range r % 7 {
				runtime.Gosched()
			}
			out = root.StopNow()
		})
		close(start)
		wg.Wait()
		awaitReturn(t, "StopNow", stopper)
		awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))
		awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
		mu.Lock()
		byPool := map[int][]int{}
		for key, s := range ran {
			byPool[key] = slices.Clone(s)
		}
		mu.Unlock()
		for _, f := range out {
			f()
		}
		total := 0
		for c := range callers {
			mu.Lock()
			got := slices.Clone(ran[c])
			mu.Unlock()
			if !slices.Equal(got, accepted[c]) {
				t.Fatalf("round %d key %d: ran %v then handed back %v, want the accepted %v split in order",
					r, c, byPool[c], got[len(byPool[c]):], accepted[c])
			}
			total += len(accepted[c])
		}
		s := k.Stats()
		if s.Accepted != uint64(total) || s.Returned != uint64(len(out)) || s.Completed+s.Returned != s.Accepted || s.Waiting != 0 || s.Running != 0 {
			t.Fatalf("round %d: Keyed Stats = %+v, want %d accepted, %d returned, the rest completed", r, s, total, len(out))
		}
	}
}

// Every call concurrent with every other: Keyed: "A Keyed is safe for concurrent use",
// "tasks with the same key run one at a time, in the order their submits took effect";
// Pool.Resize: "No task is lost or run twice"; Pause/Resume "safe to call ... concurrently
// with any other method"; Keyed.Stats "a consistent snapshot": Running+Waiting never goes
// equal to what was accepted and has not ended. Keyeds on a root, a leveled sub-pool and a sub-pool of it take
// Submit, TrySubmit and SubmitContext from several goroutines while others pause, resume,
// resize every pool of the tree and read Stats; every accepted task runs once, in its key's
// order, and the hooks see each once.
func TestAdv7KeyedEverythingConcurrentOnATree(t *testing.T) {
	var h adv7Hooks
	root := crew.New(3)
	defer root.StopAndWait()
	mid := root.Sub(2, crew.WithPriority(-1))
	deep := mid.Sub(2, crew.WithHooks(h.hooks()))
	pools := []*crew.Pool{root, mid, deep}
	keyeds := []*crew.Keyed[string]{crew.NewKeyed[string](root), crew.NewKeyed[string](mid), crew.NewKeyed[string](deep, crew.WithQueueSize(4))}
	recs := []*adv7Rec{newAdv7Rec(), newAdv7Rec(), newAdv7Rec()}
	const callers = 4
	each := crewtest.Scale(90, 30)
	var seq [callers][3][2]int // caller, keyed, key: seq numbers given to accepted tasks
	var bad atomic.Int32
	rng := rand.New(rand.NewPCG(1, 2))
	endChurn := crewtest.Churn(t, "the churn", func(int) {
		p := pools[rng.IntN(len(pools))]
		switch rng.IntN(4) {
		case 0:
			p.Pause()
		case 1:
			p.Resume()
		case 2:
			p.Resize(1 + rng.IntN(3))
		case 3:
			for _, k := range keyeds {
				if s := k.Stats(); uint64(s.Running+s.Waiting) != s.Accepted-s.Completed-s.Panicked {
					bad.Add(1)
				}
			}
		}
		time.Sleep(50 * time.Microsecond)
	})
	together(callers, each, func(c, i int) {
		for x, k := range keyeds {
			j := i % 2
			key := fmt.Sprintf("c%dk%d", c, j)
			task := recs[x].task(key, seq[c][x][j], func() {
				if i%17 == 0 {
					runtime.Gosched()
				}
			})
			var ok bool
			switch i % 3 {
			case 0:
				ok = k.Submit(key, task) == nil
			case 1:
				ok = k.TrySubmit(key, task)
			case 2:
				ok = k.SubmitContext(context.Background(), key, task) == nil
			}
			if ok {
				seq[c][x][j]++
			}
		}
	})
	endChurn()
	for _, p := range pools {
		p.Resume()
		p.Resize(3)
	}
	var deepTotal int64
	for x, k := range keyeds {
		awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
		want := map[string]int{}
		total := 0
		for c := range callers {
			for j := range 2 {
				if n := seq[c][x][j]; n > 0 {
					want[fmt.Sprintf("c%dk%d", c, j)] = n
				}
				total += seq[c][x][j]
			}
		}
		recs[x].check(t, want)
		if s := k.Stats(); s.Accepted != uint64(total) || s.Completed != uint64(total) || s.Running != 0 || s.Waiting != 0 {
			t.Errorf("Keyed %d Stats = %+v, want %d accepted and completed", x, s, total)
		}
		if x == 2 {
			deepTotal = int64(total)
		}
	}
	if x := bad.Load(); x != 0 {
		t.Errorf("%d Keyed snapshots had Running+Waiting other than the tasks accepted and not ended", x)
	}
	if h.started.Load() != deepTotal || h.finished.Load() != deepTotal || h.queued.Load() != deepTotal+h.rejected.Load() {
		t.Errorf("deep hooks counted %s for %d accepted keyed tasks", h.counts(), deepTotal)
	}
}

// Keyed: "A key whose task is slow or never returns holds one of the pool's workers and
// delays only its own later tasks", also on a sub-pool with a level under a paused and
// resumed parent: a stuck key on a sub-pool of 2 does not stop another key there, nor the
// keys of a Keyed of a sibling sub-pool, and Pool.Wait of the sibling returns while the
// stuck key still holds its worker.
func TestAdv7KeyedStuckKeyDelaysOnlyItsOwnTasksAcrossSubPools(t *testing.T) {
	root := crew.New(3)
	defer root.StopAndWait()
	a := root.Sub(2, crew.WithPriority(2))
	b := root.Sub(2)
	ka := crew.NewKeyed[string](a)
	kb := crew.NewKeyed[string](b)
	body, started, release := adv7Gate()
	defer release()
	must(t, ka.Submit("stuck", body))
	crewtest.Recv(t, "the stuck task", started)
	var stuckNext atomic.Bool
	must(t, ka.Submit("stuck", func() { stuckNext.Store(true) }))
	root.Pause()
	var n atomic.Int32
	for i := range 10 {
		must(t, ka.Submit("free", func() { n.Add(1) }))
		must(t, kb.Submit(fmt.Sprint("k", i%3), func() { n.Add(1) }))
	}
	root.Resume()
	awaitReturn(t, "sibling Pool.Wait", goRun(b.Wait))
	awaitStats(t, ka, "the free key to finish", func(s crew.Stats) bool { return s.Completed == 10 })
	if stuckNext.Load() {
		t.Error("the stuck key's next task ran before its first returned")
	}
	if s := ka.Stats(); s.Running != 1 || s.Waiting != 1 {
		t.Errorf("Keyed Stats with one stuck key = %+v, want 1 running, 1 waiting", s)
	}
	release()
	awaitReturn(t, "Keyed.Wait", goRun(ka.Wait))
	if !stuckNext.Load() || n.Load() != 20 {
		t.Errorf("stuck key's next ran %v, others ran %d; want true and 20", stuckNext.Load(), n.Load())
	}
}

// DiscardOldest: "Every drop counts in Stats.Discarded", a dropped plain task "goes to the
// discard handler"; Keyed.Stats: Discarded counts the keyed tasks "DiscardOldest dropped with
// their key's turn (they went to the discard handler)"; Keyed: tasks of one key run "in the
// order their submits took effect". Plain submitters flood a small DiscardOldest queue while
// keyed submitters feed three keys, with Resize and Pause churning: every keyed task runs or
// is dropped, never both; those that run keep their key's order; the handler, the Discarded
// hook and the counters all agree.
func TestAdv7KeyedDiscardOldestStormAccountsEveryTask(t *testing.T) {
	var h adv7Hooks
	var handled atomic.Int64
	p := crew.New(2, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest), crew.WithHooks(h.hooks()),
		crew.WithDiscardHandler(func(any) { handled.Add(1) }))
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	var mu sync.Mutex
	ran := map[int][]int{}
	var plainRan atomic.Int64
	const keyers, plainers = 3, 2
	each := crewtest.Scale(200, 60)
	endChurn := crewtest.Churn(t, "the churn", func(i int) {
		switch i % 3 {
		case 0:
			p.Resize(1)
		case 1:
			p.Pause()
		case 2:
			p.Resume()
			p.Resize(2)
		}
		runtime.Gosched()
	})
	together(keyers+plainers, each, func(c, i int) {
		runtime.Gosched() // let the workers and the churn in between submits
		if c < keyers {
			adv7NoErr(t, k.Submit(c, func() { mu.Lock(); ran[c] = append(ran[c], i); mu.Unlock() }))
			return
		}
		adv7NoErr(t, p.Submit(func() { plainRan.Add(1) }))
	})
	endChurn()
	p.Resume()
	p.Resize(2)
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	awaitReturn(t, "Pool.Wait", goRun(p.Wait))
	mu.Lock()
	defer mu.Unlock()
	keyedRan := 0
	for c := range keyers {
		if !slices.IsSorted(ran[c]) || len(slices.Compact(slices.Clone(ran[c]))) != len(ran[c]) {
			t.Errorf("key %d ran %v, want strictly increasing", c, ran[c])
		}
		keyedRan += len(ran[c])
	}
	ks := k.Stats()
	total := uint64(keyers * each)
	if ks.Accepted != total || ks.Completed != uint64(keyedRan) || ks.Completed+ks.Discarded != total || ks.Waiting != 0 || ks.Running != 0 {
		t.Errorf("Keyed Stats = %+v with %d keyed tasks run, want %d accepted, each run or discarded", ks, keyedRan, total)
	}
	plainDropped := int64(plainers*each) - plainRan.Load()
	if got, want := h.discarded.Load(), plainDropped+int64(ks.Discarded); got != want || handled.Load() != want {
		t.Errorf("Discarded hook %d, handler %d, want %d: %d plain and %d keyed tasks dropped",
			got, handled.Load(), want, plainDropped, ks.Discarded)
	}
	if got, want := h.started.Load(), int64(keyedRan)+plainRan.Load(); got != want || h.finished.Load() != want {
		t.Errorf("Started/Finished hooks %d/%d, want %d", got, h.finished.Load(), want)
	}
	ps := p.Stats()
	if ps.Accepted != ps.Completed+ps.Discarded || ps.Discarded < uint64(plainDropped) {
		t.Errorf("pool Stats = %+v, want every task and turn completed or discarded, %d plain drops among them", ps, plainDropped)
	}
}

// NewKeyed: with WithQueueSize(n) "the next submit blocks until one starts"; Pool.Stop:
// "submitters blocked on a full queue return ErrStopped" and Keyed.Submit "After the pool is
// stopped it returns ErrStopped". A keyed task that submits with Submit into its own key,
// whose waiting task fills the Keyed's bound, waits for a start that only its own return
// allows: nothing in the documentation says the Keyed breaks that wait (as "Waits that help"
// do for a pool's queue), and it lasts until the pool stops, which refuses the task with
// ErrStopped and lets the accepted one run.
func TestAdv7KeyedTaskBlockedOnItsOwnFullKeyWaitsForStop(t *testing.T) {
	var h adv7Hooks
	p := crew.New(1, crew.WithHooks(h.hooks()))
	defer p.StopAndWait()
	k := crew.NewKeyed[string](p, crew.WithQueueSize(1))
	var x1Ran, x2Ran atomic.Int32
	var got error
	returned := make(chan struct{})
	must(t, k.Submit("x", func() {
		defer close(returned)
		adv7NoErr(t, k.Submit("x", func() { x1Ran.Add(1) }))
		got = k.Submit("x", func() { x2Ran.Add(1) })
	}))
	waitFor(t, "the task's second submit", func() bool { return h.queued.Load() == 3 })
	stillBlocked(t, "a keyed task's Submit into its own full key", returned)
	if s := k.Stats(); s.Running != 1 || s.Waiting != 1 || s.Accepted != 2 {
		t.Errorf("Keyed Stats = %+v, want 1 running and 1 waiting", s)
	}
	p.Stop()
	awaitReturn(t, "the blocked Submit after Stop", returned)
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	if !errors.Is(got, crew.ErrStopped) || x1Ran.Load() != 1 || x2Ran.Load() != 0 {
		t.Errorf("Submit = %v, x1 ran %d, x2 ran %d; want ErrStopped, 1, 0", got, x1Ran.Load(), x2Ran.Load())
	}
	if s := k.Stats(); s.Accepted != 2 || s.Completed != 2 || s.Rejected != 0 {
		t.Errorf("Keyed Stats = %+v, want 2 accepted and completed", s)
	}
}
