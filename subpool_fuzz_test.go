package crew_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// FuzzSubPoolOperations' operations are FuzzPoolOperations' first ones, up to opGroup, and
// these: opNewSub adds a sub-pool, if fewer than two exist; opStopRace stops the parent from
// two goroutines while a third stops the pool the byte names, or ends the parent's
// WithContext context if it has one; opSubPause, opSubResume, opSubStopNow and opSubRate
// pause, resume, stop now or rate limit the pool the byte names.
const (
	opNewSub = opGroup + 1 + iota
	opStopRace
	opSubPause
	opSubResume
	opSubStopNow
	opSubRate // x%4: no limit, or limits fast enough to keep an input short
	subFuzzOps
)

// subFuzzPool is one pool of the tree FuzzSubPoolOperations drives: the parent or a sub-pool.
type subFuzzPool struct {
	p        *crew.Pool
	gauge    *limitGauge // its own tasks, against its own limit
	limit    int         // the limit in force once the last Resize returned
	stopped  bool        // Stop was called on it or on the parent
	accepted uint64      // tasks its submits accepted
	prev     crew.Stats
	paused   atomic.Bool // set once Pause has returned, cleared before what resumes
	stopNow  bool        // StopNow was called on it or on the parent
}

// subFuzzTask is what FuzzSubPoolOperations knows of one task it submitted.
type subFuzzTask struct {
	pool       int // index into the pools
	accepted   bool
	returned   bool    // StopNow took it out
	group      bool    // a Group function: StopNow fails it rather than returning it
	id         uintptr // funcID of its func
	early      atomic.Bool
	panics     bool
	runs       atomic.Int32
	finished   atomic.Bool
	submitStep int
}

// FuzzSubPoolOperations runs a sequence of operations decoded from the input against a
// parent pool and up to two sub-pools, and checks the guarantees of [crew.Pool.Sub] on the
// way: tasks of the parent and its sub-pools together never run above the parent's limit,
// nor a sub-pool's above its own, even when the sub-pool's limit is larger; after a
// sub-pool's Stop its submits return ErrStopped while the parent and the sibling still
// accept; after the parent's Stop every sub-pool's submits return ErrStopped, also when that
// Stop ran concurrently with another Stop or with the end of the parent's context, and from
// the moment that context has ended; a Wait returns
// only when every task its pool accepted has finished; Stats snapshots add up. At the end
// the parent is stopped (Stop, or StopAndWait): every accepted task ran exactly once, no
// refused task ran, every panic reached the handler, and no goroutine is left.
//
// Some tasks hold at a gate until the next Wait (or an operation that has to let them
// finish), so sub-pool tasks queue behind the parent's; the others yield a few times. Tasks
// end by returning, panicking (with a value or with nil) or calling runtime.Goexit. Groups on
// the pools call Go while two goroutines wait on them.
func FuzzSubPoolOperations(f *testing.F) {
	// The first byte chooses the parent: limit 1+b%4, queue size b/4%4 (0: unbounded),
	// 0x10 non-blocking, 0x20 the end is Stop (then StopAndWait) rather than StopAndWait,
	// 0x40 the parent has a WithContext context, 0x80 every pool has WithLatencyHistograms and
	// each sub-pool a priority of its own (the first sub-pool made 1, the next 2, ...).
	// The second chooses the sub-pools: b%3 of them, limits 1+b/3%6 and 1+b/18%6. Each
	// later byte is an operation (b%subFuzzOps) on a pool (arg%3: parent, sub-pool 1, 2),
	// where arg is b/subFuzzOps; arg/3 holds the task at the gate (odd) or is the new
	// limit (1+arg/3%6).
	op := func(op, pool, x int) byte {
		b := op + subFuzzOps*(pool+3*x)
		if b > 255 {
			panic(fmt.Sprintf("seed op(%d, %d, %d) does not fit a byte", op, pool, x))
		}
		return byte(b)
	}
	f.Add([]byte{0, 0})                                                                  // one worker, no sub-pool
	f.Add([]byte{0, 1 + 3*5, op(opSubmit, 1, 1), op(opSubmit, 1, 1), op(opSubmit, 1, 0), // sub-pool limit 6 above the parent's 1
		op(opSubmit, 0, 1), op(opTrySubmit, 1, 0), op(opStats, 0, 0), op(opWait, 1, 0), op(opStats, 0, 0)})
	f.Add([]byte{1, 2 + 3*3 + 18*5, op(opSubmit, 1, 1), op(opSubmit, 2, 1), op(opSubmit, 1, 1), // stop a sub-pool under load
		op(opSubmit, 2, 1), op(opSubmit, 1, 0), op(opStop, 1, 0), op(opSubmit, 1, 0), op(opTrySubmit, 2, 0),
		op(opSubmit, 0, 0), op(opStats, 0, 0), op(opWait, 0, 0), op(opWait, 2, 0)})
	f.Add([]byte{3, 2 + 3*5 + 18*5, op(opSubmit, 0, 1), op(opSubmit, 1, 1), op(opSubmit, 2, 1), // shrink the parent while sub-pool tasks queue
		op(opSubmit, 1, 1), op(opSubmit, 2, 1), op(opSubmit, 1, 0), op(opSubmit, 2, 0), op(opStats, 0, 0),
		op(opResize, 0, 0), op(opStats, 1, 0), op(opSubmit, 1, 1), op(opSubmit, 2, 1), op(opResize, 0, 3), op(opWait, 1, 0)})
	f.Add([]byte{0x21, 2 + 3*2 + 18*3, op(opSubmit, 0, 1), op(opSubmit, 1, 1), op(opSubmit, 1, 1), // parent Stop with queued sub-pool tasks
		op(opSubmit, 2, 1), op(opSubmit, 2, 0), op(opStop, 0, 0), op(opSubmit, 1, 0), op(opTrySubmit, 2, 0),
		op(opSubmitTimeout, 1, 0), op(opNewSub, 0, 2), op(opSubmit, 2, 0), op(opStats, 0, 0), op(opWait, 0, 0)})
	f.Add([]byte{0x04 + 1, 1 + 3*4, op(opSubmit, 0, 1), op(opSubmit, 0, 1), op(opSubmit, 1, 1), // bounded parent, blocked Submit
		op(opSubmit, 1, 1), op(opSubmit, 0, 1), op(opSubmit, 0, 0), op(opSubmitTimeout, 0, 0), op(opStats, 0, 0)})
	f.Add([]byte{0x18 + 2, 1 + 3*1, op(opSubmit, 0, 1), op(opSubmit, 0, 1), op(opSubmit, 0, 1), // non-blocking bounded parent
		op(opSubmit, 0, 1), op(opSubmit, 0, 1), op(opSubmit, 1, 1), op(opTrySubmit, 0, 0), op(opResize, 1, 4),
		op(opSubmitTimeout, 0, 0), op(opStats, 0, 0), op(opResize, 0, 4), op(opStats, 1, 0), op(opWait, 0, 0)})
	f.Add([]byte{2, 0, op(opNewSub, 0, 4), op(opNewSub, 0, 0), op(opSubmitPanic, 1, 0), op(opSubmitPanic, 2, 0), // panics, nil, canceled
		op(opSubmitNil, 1, 0), op(opSubmitCanceled, 2, 0), op(opSubmit, 1, 1), op(opResize, 1, 0), op(opStop, 2, 0),
		op(opResize, 2, 3), op(opWait, 2, 0), op(opSubmitPanic, 0, 0), op(opStats, 0, 0)})
	f.Add([]byte{0x23, 2 + 3*5 + 18*5, op(opSubmit, 1, 1), op(opSubmit, 1, 1), op(opSubmit, 2, 1), op(opSubmit, 2, 1), // grow the parent, sub-pools big
		op(opResize, 0, 4), op(opSubmit, 1, 1), op(opSubmit, 2, 1), op(opStats, 0, 0), op(opResize, 1, 0), op(opResize, 0, 1)})
	f.Add([]byte{3, 2, op(opSubmit, 1, 1), op(opSubmit, 1, 1), op(opSubmit, 2, 1), op(opSubmit, 2, 1), // sub-pools at their own limits, below the parent's
		op(opSubmit, 1, 1), op(opStats, 0, 0), op(opWait, 1, 0), op(opWait, 2, 0)})
	f.Add([]byte{0x41, 2 + 3*2 + 18*3, op(opSubmit, 1, 1), op(opSubmit, 2, 1), op(opSubmit, 0, 1), // Stops racing the context's end
		op(opStopRace, 1, 0), op(opSubmit, 1, 0), op(opTrySubmit, 2, 0), op(opNewSub, 0, 1), op(opWait, 0, 0)})
	f.Add([]byte{0x01, 2 + 3*1 + 18*2, op(opSubmit, 2, 1), op(opStopRace, 0, 0), op(opSubmit, 2, 0), op(opWait, 0, 0)}) // Stops racing Stops
	f.Add([]byte{2, 2 + 3*3 + 18*3, op(opSubmitPanicNil, 1, 0), op(opSubmitGoexit, 2, 0), op(opSubmitGoexit, 1, 0),     // panic(nil) and Goexit
		op(opSubmitPanicNil, 0, 0), op(opSubmitGoexit, 0, 0), op(opStats, 0, 0), op(opWait, 0, 0), op(opStats, 1, 0)})
	f.Add([]byte{1, 2 + 3*2 + 18*2, op(opGroup, 1, 1), op(opGroup, 2, 2), op(opGroup, 0, 1), op(opStats, 0, 0), // groups: Go with Wait, after Wait, after Stop
		op(opWait, 1, 0), op(opGroup, 1, 0), op(opStop, 1, 0), op(opGroup, 1, 1), op(opWait, 0, 0)})
	// Pause of a sub-pool and of the parent, Resume, Wait on paused pools, Stop resumes.
	f.Add([]byte{1, 2 + 3*2 + 18*2, op(opSubmit, 1, 1), op(opSubPause, 1, 0), op(opSubmit, 1, 1), op(opSubmit, 2, 1),
		op(opSubPause, 0, 0), op(opSubmit, 2, 0), op(opSubmit, 0, 0), op(opStats, 0, 0), op(opSubResume, 0, 0),
		op(opStats, 1, 0), op(opWait, 1, 0), op(opSubResume, 1, 0), op(opWait, 0, 0)})
	f.Add([]byte{0x21, 2 + 3*1 + 18*3, op(opSubPause, 2, 0), op(opSubmit, 2, 0), op(opSubmit, 2, 1), op(opSubPause, 0, 0),
		op(opSubmit, 1, 0), op(opStop, 0, 0), op(opStats, 0, 0)}) // the parent's Stop with paused sub-pools
	f.Add([]byte{2, 1 + 3*3, op(opSubPause, 1, 0), op(opSubmit, 1, 0), op(opSubmit, 1, 1), op(opStop, 1, 0), op(opWait, 1, 0)})
	// StopNow of a sub-pool, of a paused parent with queued sub-pool tasks, after Stop.
	f.Add([]byte{0, 2 + 3*2 + 18*2, op(opSubmit, 0, 1), op(opSubmit, 1, 1), op(opSubmit, 1, 0), op(opSubmit, 2, 0),
		op(opSubStopNow, 1, 0), op(opSubmit, 1, 0), op(opSubmit, 2, 0), op(opStats, 0, 0), op(opWait, 0, 0)})
	f.Add([]byte{1, 2 + 3*1 + 18*1, op(opSubmit, 1, 1), op(opSubPause, 0, 0), op(opSubmitPanic, 1, 0), op(opSubmit, 2, 1),
		op(opSubmit, 0, 0), op(opGroup, 2, 1), op(opSubStopNow, 0, 0), op(opSubStopNow, 0, 0), op(opWait, 0, 0)})
	f.Add([]byte{0x20, 1 + 3*2, op(opSubmit, 1, 1), op(opSubmit, 1, 1), op(opSubmit, 1, 0), op(opStop, 0, 0),
		op(opSubStopNow, 1, 0), op(opStats, 1, 0)})
	// Observed, with a priority per sub-pool: waits and runs timed through levels, pauses,
	// StopNow and shrinking.
	f.Add([]byte{0x80 | 1, 2 + 3*2 + 18*2, op(opSubmit, 0, 1), op(opSubmit, 1, 1), op(opSubmit, 2, 1), op(opSubmit, 0, 0),
		op(opSubmit, 1, 0), op(opSubmit, 2, 0), op(opStats, 0, 0), op(opWait, 0, 0), op(opStats, 1, 0)})
	f.Add([]byte{0x80, 2 + 3*1 + 18*1, op(opSubmit, 1, 1), op(opSubPause, 0, 0), op(opSubmit, 2, 1), op(opSubmit, 1, 0),
		op(opSubmit, 0, 0), op(opSubStopNow, 2, 0), op(opSubResume, 0, 0), op(opResize, 0, 0), op(opWait, 0, 0)})
	// Rate limits on the parent and a sub-pool.
	f.Add([]byte{3, 2 + 3*2 + 18*3, op(opSubRate, 0, 2), op(opSubRate, 1, 1), op(opSubmit, 1, 0), op(opSubmit, 1, 0),
		op(opSubmit, 2, 0), op(opSubmit, 0, 0), op(opStats, 0, 0), op(opSubRate, 0, 0), op(opWait, 0, 0)})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		if len(in) > 200 {
			in = in[:200]
		}
		base := runtime.NumGoroutine()
		limit, queueSize := 1+int(in[0]%4), int(in[0]/4%4)
		nonBlocking, endWithStop, withContext := in[0]&0x10 != 0, in[0]&0x20 != 0, in[0]&0x40 != 0
		observed := in[0]&0x80 != 0
		var handled atomic.Uint64
		opts := []crew.Option{
			crew.WithIdleTimeout(0),
			crew.WithQueueSize(queueSize),
			crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }),
		}
		if nonBlocking {
			opts = append(opts, crew.WithNonBlocking())
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if withContext {
			opts = append(opts, crew.WithContext(ctx))
		}
		if observed {
			opts = append(opts, crew.WithLatencyHistograms())
		}
		parent := &subFuzzPool{p: crew.New(limit, opts...), gauge: &limitGauge{}, limit: limit}
		parent.gauge.limit.Store(int64(limit))
		pools := []*subFuzzPool{parent}
		watchDone := make(chan struct{})
		var watchers []<-chan error
		watch := func(fp *subFuzzPool) {
			watchers = append(watchers, watchStats(t, fmt.Sprint("pool ", len(watchers)), fp.p, 6, watchDone))
		}
		watch(parent)
		newSub := func(n int) {
			var subOpts []crew.Option
			if observed {
				subOpts = append(subOpts, crew.WithLatencyHistograms(), crew.WithPriority(len(pools)))
			}
			fp := &subFuzzPool{p: parent.p.Sub(n, subOpts...), gauge: &limitGauge{}, limit: n, stopped: parent.stopped}
			fp.gauge.limit.Store(int64(n))
			pools = append(pools, fp)
			watch(fp)
		}
		for _, n := range []int{1 + int(in[1]/3%6), 1 + int(in[1]/18%6)}[:in[1]%3] {
			newSub(n)
		}

		gate := make(chan struct{})
		release := func() {
			close(gate)
			gate = make(chan struct{})
		}
		finished := false
		defer func() {
			if finished {
				return
			}
			// A check failed: leave nothing running for the next input if the pool can,
			// but do not hang on one that has lost a task.
			release()
			for _, fp := range pools {
				fp.p.Stop()
			}
			close(watchDone)
			select {
			case <-goRun(parent.p.StopAndWait):
			case <-time.After(10 * time.Second):
			}
		}()

		var tasks []*subFuzzTask
		newTask := func(step, pool int, held bool, end taskEnd) (*subFuzzTask, func()) {
			rec := &subFuzzTask{pool: pool, panics: end.panics(), submitStep: step}
			tasks = append(tasks, rec)
			g := gate
			own := pools[pool].gauge
			ownPool := pools[pool]
			fn := func() {
				defer rec.finished.Store(true)
				rec.runs.Add(1)
				if ownPool.paused.Load() || parent.paused.Load() {
					rec.early.Store(true)
				}
				parent.gauge.enter()
				defer parent.gauge.leave()
				if pool > 0 {
					own.enter()
					defer own.leave()
				}
				if held {
					<-g
				} else {
					for range 3 {
						runtime.Gosched()
					}
				}
				end.end()
			}
			rec.id = funcID(fn)
			return rec, fn
		}
		// resumeAll resumes every pool, so that what waits for queued tasks returns.
		resumeAll := func() {
			for _, fp := range pools {
				fp.paused.Store(false)
				fp.p.Resume()
			}
		}
		// The groups of opGroup, and the Wait calls on them not yet checked.
		type fuzzGroup struct {
			g       *crew.Group
			stopped bool // a Go found the pool stopped: that is the group's error
		}
		type groupWait struct {
			fg  *fuzzGroup
			err chan error
		}
		var waiters []groupWait
		groups := map[int][]*fuzzGroup{} // each pool's
		// waited checks, once every held task has been let go, that every Wait on a group
		// returns, with no error but the ErrStopped of a Go after Stop.
		waited := func(step int) {
			t.Helper()
			for _, w := range waiters {
				select {
				case err := <-w.err:
					if err != nil && !(w.fg.stopped && errors.Is(err, crew.ErrStopped)) {
						t.Fatalf("step %d: Group.Wait = %v", step, err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("step %d: Group.Wait has not returned 10 s after its functions were let go", step)
				}
			}
			waiters = waiters[:0]
		}
		// refuses checks that every pool in ps refuses a task, after what.
		refuses := func(what string, ps []*subFuzzPool) {
			for j, fp := range ps {
				if fp.p.TrySubmit(func() {}) {
					t.Errorf("%s: pool %d accepted a task", what, j)
				}
			}
		}
		// settled calls f on its own goroutine and waits for it; if it blocks on the
		// parent's full queue, the gate is released so that the queue drains.
		settled := func(what string, f func()) {
			t.Helper()
			done := goRun(f)
			deadline := time.Now().Add(10 * time.Second)
			for released := false; ; {
				select {
				case <-done:
					return
				default:
				}
				if !released && crew.BlockedSubmitters(parent.p) > 0 {
					release()
					resumeAll()
					released = true
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s has not returned after 10 s", what)
				}
				time.Sleep(20 * time.Microsecond)
			}
		}
		// mayBeFull says whether a submit to pools[i] may find its queue full.
		mayBeFull := func(i int) bool { return i == 0 && queueSize > 0 }
		checkStats := func(step int, i int) {
			t.Helper()
			fp := pools[i]
			s := fp.p.Stats()
			switch {
			case s.Completed+s.Panicked > s.Accepted, s.Running > s.MaxWorkers,
				s.Running < 0, s.Idle < 0, s.Waiting < 0:
				t.Fatalf("step %d: pool %d: Stats %+v do not add up", step, i, s)
			case s.MaxWorkers != fp.limit:
				t.Fatalf("step %d: pool %d: MaxWorkers %d, last Resize set %d", step, i, s.MaxWorkers, fp.limit)
			case i > 0 && s.Accepted != fp.accepted, i == 0 && s.Accepted < fp.accepted:
				t.Fatalf("step %d: pool %d: Accepted %d, its submits accepted %d", step, i, s.Accepted, fp.accepted)
			case s.Accepted < fp.prev.Accepted, s.Completed < fp.prev.Completed,
				s.Panicked < fp.prev.Panicked, s.Rejected < fp.prev.Rejected:
				t.Fatalf("step %d: pool %d: a counter went backwards from %+v to %+v", step, i, fp.prev, s)
			}
			fp.prev = s
		}
		// submitted records a submit's outcome and checks it against what the pool's state
		// allows: errs lists the errors the pool may return besides nil.
		submitted := func(step, i int, rec *subFuzzTask, err error, what string, errs ...error) {
			t.Helper()
			fp := pools[i]
			if fp.stopped {
				errs = []error{crew.ErrStopped}
				if what == "SubmitContext" {
					errs = append(errs, context.DeadlineExceeded)
				}
				if err == nil {
					t.Fatalf("step %d: %s to stopped pool %d accepted the task", step, what, i)
				}
			}
			if err == nil {
				rec.accepted = true
				fp.accepted++
				return
			}
			for _, want := range errs {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("step %d: %s to pool %d (stopped %v) = %v, want nil or one of %v", step, what, i, fp.stopped, err, errs)
		}
		submit := func(step, i int, rec *subFuzzTask, task func()) {
			t.Helper()
			var err error
			if mayBeFull(i) && !nonBlocking {
				settled(fmt.Sprintf("step %d: Submit", step), func() { err = pools[i].p.Submit(task) })
			} else {
				err = pools[i].p.Submit(task)
			}
			if mayBeFull(i) && nonBlocking {
				submitted(step, i, rec, err, "Submit", crew.ErrQueueFull)
			} else {
				submitted(step, i, rec, err, "Submit")
			}
		}
		// waitOn releases the gate and waits on pools[i]: every task it accepted has finished.
		waitOn := func(step, i int) {
			t.Helper()
			release()
			resumeAll() // Wait waits for paused work: a paused pool's Wait would not return
			awaitReturn(t, fmt.Sprintf("step %d: Wait on pool %d", step, i), goRun(pools[i].p.Wait))
			waited(step)
			for j, rec := range tasks {
				if rec.group && pools[rec.pool].stopNow && rec.runs.Load() == 0 {
					continue // StopNow took it out and failed it
				}
				if rec.pool == i && rec.accepted && !rec.returned && !rec.finished.Load() {
					t.Fatalf("step %d: Wait on pool %d returned before task %d (step %d) finished", step, i, j, rec.submitStep)
				}
			}
		}

		for step, b := range in[2:] {
			op, arg := int(b%subFuzzOps), int(b/subFuzzOps)
			i, x := arg%3, arg/3
			if i >= len(pools) {
				i = 0
			}
			fp := pools[i]
			switch op {
			case opSubmit, opSubmitPanic, opSubmitPanicNil, opSubmitGoexit:
				rec, task := newTask(step, i, op == opSubmit && x%2 == 1, endOf(op))
				submit(step, i, rec, task)
			case opTrySubmit:
				rec, task := newTask(step, i, x%2 == 1, endReturn)
				ok := fp.p.TrySubmit(task)
				if ok {
					rec.accepted = true
					fp.accepted++
				}
				if want := !fp.stopped; ok != want && !(mayBeFull(i) && !ok) {
					t.Fatalf("step %d: TrySubmit to pool %d (stopped %v) = %v", step, i, fp.stopped, ok)
				}
			case opSubmitCanceled:
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_, task := newTask(step, i, false, endReturn)
				if err := fp.p.SubmitContext(ctx, task); !errors.Is(err, context.Canceled) {
					t.Fatalf("step %d: SubmitContext to pool %d with an ended context = %v, want context.Canceled", step, i, err)
				}
			case opSubmitTimeout:
				rec, task := newTask(step, i, x%2 == 1, endReturn)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
				err := fp.p.SubmitContext(ctx, task)
				cancel()
				// The deadline may pass before the call even looks at the queue.
				if mayBeFull(i) && nonBlocking {
					submitted(step, i, rec, err, "SubmitContext", context.DeadlineExceeded, crew.ErrQueueFull)
				} else {
					submitted(step, i, rec, err, "SubmitContext", context.DeadlineExceeded)
				}
			case opResize:
				n := 1 + x%6
				resized := goRun(func() { fp.gauge.resize(fp.p, n) })
				if n < fp.limit {
					// Resize waits for the busy workers above n, and a sub-pool's workers
					// may wait for the parent's: let every held task finish.
					runtime.Gosched()
					release()
				}
				awaitReturn(t, fmt.Sprintf("step %d: Resize(%d) of pool %d", step, n, i), resized)
				fp.limit = n
			case opWait:
				waitOn(step, i)
			case opStop:
				if i == 0 {
					for _, q := range pools {
						q.paused.Store(false)
					}
				}
				fp.paused.Store(false)
				fp.p.Stop()
				fp.stopped = true
				if i == 0 {
					for _, sub := range pools[1:] {
						sub.stopped = true
					}
					break
				}
				// The parent and the sibling still accept.
				for j, other := range pools {
					if j != i && !other.stopped {
						rec, task := newTask(step, j, false, endReturn)
						submit(step, j, rec, task)
					}
				}
			case opStats:
				// Give held tasks the chance to start, so that a limit that does not hold
				// shows: until every pool has nothing waiting or runs at its limit, or at
				// the parent's. A shape this misses costs 50 ms, not a failure.
				deadline := time.Now().Add(50 * time.Millisecond)
				for j := 0; j < len(pools) && time.Now().Before(deadline); {
					s, ps := pools[j].p.Stats(), parent.p.Stats()
					if s.Waiting == 0 || s.Running >= s.MaxWorkers || ps.Running >= ps.MaxWorkers {
						j++
						continue
					}
					time.Sleep(20 * time.Microsecond)
				}
				for j := range pools {
					checkStats(step, j)
				}
			case opSubmitNil:
				if err := fp.p.Submit(nil); !errors.Is(err, crew.ErrNilTask) {
					t.Fatalf("step %d: Submit(nil) to pool %d = %v, want ErrNilTask", step, i, err)
				}
			case opNewSub:
				if len(pools) < 3 {
					newSub(1 + x%6)
				}
			case opGroup:
				if mayBeFull(i) {
					continue // Go would block on the full queue: the bounded-queue tests' business
				}
				// A group per step: a Wait ends its group (functions given after it are
				// skipped), so the Waits start once the functions are given.
				g, _ := fp.p.Group(context.Background())
				fg := &fuzzGroup{g: g}
				groups[i] = append(groups[i], fg)
				for range 1 + x%3 {
					rec, task := newTask(step, i, x%2 == 1, endReturn)
					rec.group = true
					fg.g.Go(func(context.Context) error { task(); return nil })
					if fp.stopped {
						fg.stopped = true
						continue
					}
					rec.accepted = true
					fp.accepted++
				}
				for range 2 {
					w := groupWait{fg, make(chan error, 1)}
					go func() { w.err <- fg.g.Wait() }()
					waiters = append(waiters, w)
				}
			case opSubPause:
				fp.p.Pause()
				if fp.stopped {
					break // a stopped pool still runs its backlog
				}
				// A task the engine started before Pause returned may run its first line
				// after: hold the check until every task the pool counts as running has
				// shown itself (a shape that does not settle in 50 ms goes unchecked).
				for deadline := time.Now().Add(50 * time.Millisecond); time.Now().Before(deadline); {
					before, shown := fp.p.Stats().Running, 0
					for _, rec := range tasks {
						if (i == 0 || rec.pool == i) && rec.runs.Load() == 1 && !rec.finished.Load() {
							shown++
						}
					}
					if after := fp.p.Stats().Running; before == shown && after == shown {
						fp.paused.Store(true)
						break
					}
					time.Sleep(20 * time.Microsecond)
				}
			case opSubResume:
				fp.paused.Store(false)
				fp.p.Resume()
			case opSubRate:
				r := fuzzRates[x%len(fuzzRates)]
				fp.p.SetRateLimit(r.perSecond, r.burst)
			case opSubStopNow:
				// StopNow takes out what has not started, of fp and its sub-pools; each was
				// accepted, has not run and never will. It stops as Stop does, which resumes:
				// a task handed to a worker before a pause, not yet begun, may start during
				// the call, and so may the task a sub-pool's worker it carried relays to.
				fp.paused.Store(false)
				if i == 0 {
					for _, sub := range pools[1:] {
						sub.paused.Store(false)
					}
				}
				got := fp.p.StopNow()
				for _, f := range got {
					id := funcID(f)
					j := slices.IndexFunc(tasks, func(rec *subFuzzTask) bool { return rec.id == id })
					switch {
					case j < 0:
						t.Fatalf("step %d: StopNow of pool %d returned a function that is no task", step, i)
					case !tasks[j].accepted || tasks[j].returned || tasks[j].runs.Load() != 0:
						t.Fatalf("step %d: StopNow of pool %d returned task %d (step %d): accepted %v, returned before %v, runs %d",
							step, i, j, tasks[j].submitStep, tasks[j].accepted, tasks[j].returned, tasks[j].runs.Load())
					case i > 0 && tasks[j].pool != i:
						t.Fatalf("step %d: StopNow of sub-pool %d returned a task of pool %d", step, i, tasks[j].pool)
					}
					tasks[j].returned = true
				}
				fp.paused.Store(false)
				fp.stopped, fp.stopNow = true, true
				for _, fg := range groups[i] {
					fg.stopped = true // a Go function taken out fails with ErrStopped
				}
				if i == 0 {
					for j, sub := range pools[1:] {
						sub.stopped, sub.stopNow = true, true
						sub.paused.Store(false)
						for _, fg := range groups[j+1] {
							fg.stopped = true
						}
					}
				}
			case opStopRace:
				// After each Stop returns, the pools it stops refuse tasks; so do all once the
				// parent's context has ended.
				for _, q := range pools {
					q.paused.Store(false) // each of these resumes what it stops
				}
				together(3, 1, func(c, _ int) {
					switch {
					case c == 0 && withContext:
						cancel()
						refuses(fmt.Sprintf("step %d: after the parent's context ended", step), pools)
					case c == 2:
						fp.p.Stop()
						refuses(fmt.Sprintf("step %d: after pool %d's Stop", step, i), pools[i:i+1])
					default:
						parent.p.Stop()
						refuses(fmt.Sprintf("step %d: after the parent's Stop", step), pools)
					}
				})
				if t.Failed() {
					t.FailNow()
				}
				for _, fp := range pools {
					fp.stopped = true
				}
			}
			// A snapshot with nothing running or waiting is of an idle pool: every task it
			// accepted has ended, once.
			for j, fp := range pools {
				if s := fp.p.Stats(); s.Running == 0 && s.Waiting == 0 {
					idleIdentity(t, fmt.Sprintf("step %d: pool %d, idle", step, j), s)
				}
			}
		}

		if endWithStop {
			for _, fp := range pools {
				fp.paused.Store(false)
			}
			parent.p.Stop()
			for i, fp := range pools {
				fp.stopped = true
				rec, task := newTask(len(in), i, false, endReturn)
				submit(len(in), i, rec, task)
				if _, task := newTask(len(in), i, false, endReturn); fp.p.TrySubmit(task) {
					t.Fatalf("TrySubmit to pool %d after the parent's Stop = true", i)
				}
			}
		}
		release()
		for _, fp := range pools {
			fp.paused.Store(false) // the parent's StopAndWait resumes every pool below it
		}
		awaitReturn(t, "the parent's StopAndWait", goRun(parent.p.StopAndWait))
		waited(len(in))
		finished = true
		close(watchDone)
		for _, w := range watchers {
			if err := <-w; err != nil {
				t.FailNow()
			}
		}
		for i, fp := range pools {
			if err := fp.p.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
				t.Fatalf("Submit to pool %d after the parent's StopAndWait = %v, want ErrStopped", i, err)
			}
		}

		var panics uint64
		for j, rec := range tasks {
			n := rec.runs.Load()
			if rec.group && pools[rec.pool].stopNow && n == 0 {
				continue // StopNow took it out and failed it
			}
			if rec.accepted && !rec.returned && n != 1 {
				t.Fatalf("accepted task %d (step %d, pool %d) ran %d times, want once", j, rec.submitStep, rec.pool, n)
			}
			if rec.returned && n != 0 {
				t.Fatalf("task %d (step %d, pool %d) that StopNow returned ran %d times", j, rec.submitStep, rec.pool, n)
			}
			if rec.early.Load() {
				t.Fatalf("task %d (step %d, pool %d) started while its pool or the parent was paused", j, rec.submitStep, rec.pool)
			}
			if !rec.accepted && n != 0 {
				t.Fatalf("refused task %d (step %d, pool %d) ran %d times, want never", j, rec.submitStep, rec.pool, n)
			}
			if rec.accepted && !rec.returned && rec.panics {
				panics++
			}
		}
		if h := parent.gauge.high.Load(); h > 0 {
			t.Fatalf("%d tasks of the parent and its sub-pools above the parent's limit ran at once", h)
		}
		var panicked uint64
		for i, fp := range pools {
			if h := fp.gauge.high.Load(); i > 0 && h > 0 {
				t.Fatalf("%d tasks above sub-pool %d's limit ran at once", h, i)
			}
			s := fp.p.Stats()
			idleIdentity(t, fmt.Sprintf("pool %d after StopAndWait", i), s)
			if s.Returned != crew.Removed(fp.p) || s.Idle != 0 || s.Paused {
				t.Fatalf("pool %d: stats after StopAndWait: %+v, %d taken out", i, s, crew.Removed(fp.p))
			}
			if s.Accepted < fp.accepted || i > 0 && s.Accepted != fp.accepted {
				t.Fatalf("pool %d: Accepted %d, its submits accepted %d", i, s.Accepted, fp.accepted)
			}
			// Observed, a sub-pool timed each of its tasks that ran once, whichever levels,
			// pauses and removals it went through (the parent's own count leaves its
			// sub-pools' workers out, so it is not checked here).
			if ran := s.Completed + s.Panicked; observed && i > 0 && (s.WaitTime.Count != ran || s.RunTime.Count != ran) {
				t.Fatalf("pool %d: histograms counted %d waits and %d runs of %d tasks that ran", i, s.WaitTime.Count, s.RunTime.Count, ran)
			}
			panicked += s.Panicked
		}
		if panicked != panics || handled.Load() != panics {
			t.Fatalf("%d accepted tasks panicked; Stats count %d, the handler saw %d", panics, panicked, handled.Load())
		}
		awaitGoroutines(t, "after StopAndWait", base)
	})
}
