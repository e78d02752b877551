package crew

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/crewgo/crew/internal/worker"
)

// Keyed runs tasks on a pool so that tasks with the same key run one at a time, in the order
// their submits took effect, while tasks with different keys run in parallel up to the pool's
// limit. Build one with [NewKeyed].
//
// Per key, the return of a task synchronizes before the start of the next one, so tasks of
// one key may share state without locks. A key whose task is slow or never returns holds one
// of the pool's workers and delays only its own later tasks. A key with a long backlog does
// not starve other keys: it runs a few of its tasks at a time and then waits its turn in the
// pool's queue again, behind work submitted meanwhile. A key's state is freed as soon as it
// has nothing queued or running, so keys cost memory only while busy.
//
// A Keyed keeps its waiting tasks itself, not in the pool's queue, and runs them in turns: a
// turn is one task of the pool that runs one or a few of a key's tasks. Each keyed task
// starts as a task of the pool would: a turn goes on to the key's next task only if the pool
// would start a task then (not after [Pool.Pause] has returned, not at a limit a
// [Pool.Resize] lowered, within [WithRateLimit], with no task of a higher priority waiting);
// otherwise the turn ends and the key waits in the pool's queue again. The pool's [Stats]
// count turns, not keyed tasks: a turn counts once in Accepted and Waiting while it waits,
// once in Running while it runs, once in Completed when it ends (whether its keyed tasks
// returned or panicked: their panics go to the panic handler inside the turn), and once in
// Returned or Discarded when [Pool.StopNow] or [DiscardOldest] takes it out with the keyed
// tasks it was to run. [Keyed.Stats] counts the keyed tasks themselves, and the pool's hooks
// ([WithHooks]) and latency histograms see each keyed task, not its turn. The pool's
// [WithQueueSize] does not bound keyed tasks; NewKeyed's own [WithQueueSize] does. The pool's
// [Pool.Wait], [Pool.StopAndWait] and [Pool.Shutdown] wait for accepted keyed tasks too.
//
// A Keyed is safe for concurrent use. The zero value is not usable.
type Keyed[K comparable] struct {
	p           *Pool
	queueSize   int
	nonBlocking bool
	epoch       time.Time // the submit times of keyed tasks are durations since it: see clock

	mu      sync.Mutex
	keys    map[K]*keyRunner[K]
	peak    int           // the most keys busy at once since keys was made; see forget
	waiting int           // accepted tasks not started, over all keys
	running int           // tasks started and not finished
	pending int           // accepted tasks not finished
	drained chan struct{} // closed when pending reaches 0; made on demand
	room    chan struct{} // closed when a task starts while the queue is bounded; made on demand

	// What Stats reports, per keyed task.
	accepted, completed, panicked, returned, discarded, rejected, canceled uint64
}

// keyBatch is how many tasks a key runs in one turn on a worker before it queues itself
// again behind the pool's other work. One turn per task would cost a pass through the pool's
// queue per task; draining the whole backlog would let one key starve the keys submitted
// after it (TestKeyedBacklogDoesNotStarveALaterKey).
const keyBatch = 8

// NewKeyed returns a Keyed that runs its tasks on p, which may be a sub-pool. Its options
// bound the tasks waiting over all keys: with [WithQueueSize](n), n accepted tasks may wait
// (across keys, excluding those running), and the next submit blocks until one starts, or
// returns [ErrQueueFull] under [WithNonBlocking]. Without them the waiting tasks are
// unbounded. The pool's [WithMaxWait] and [WithMaxBlocked] bound waits for the pool's queue
// only: a submit blocked on the Keyed's bound waits until a task starts, the pool stops, or
// the context of [Keyed.SubmitContext] ends, which is how to bound that wait. It panics if p
// is nil or another option sets anything: the pool's options decide everything else.
func NewKeyed[K comparable](p *Pool, opts ...Option) *Keyed[K] {
	if p == nil {
		panic("crew: NewKeyed: p must not be nil")
	}
	c := config{idleTimeout: -1}
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	// Every setting but the two that apply must have kept its zero: compared as a whole, an
	// option added to config later cannot be forgotten here.
	rest := c
	rest.queueSize, rest.nonBlocking = 0, false
	if rest.overflow == Reject {
		rest.overflow = Block
	}
	if !reflect.DeepEqual(rest, config{idleTimeout: -1}) {
		panic("crew: NewKeyed: only WithQueueSize and WithNonBlocking apply to a Keyed")
	}
	k := &Keyed[K]{p: p, queueSize: c.queueSize, nonBlocking: c.nonBlocking || c.overflow == Reject}
	if p.core.obs != nil {
		k.epoch = k.now()
	}
	return k
}

// Submit queues task to run after every task submitted earlier with the same key. A nil
// error means the task was accepted and will run exactly once, even if the pool is stopped
// afterwards. Submit blocks only while the Keyed's bounded queue is full ([WithQueueSize] on
// [NewKeyed]); under [WithNonBlocking] it returns [ErrQueueFull] instead. After the pool is
// stopped it returns [ErrStopped]; for a nil task, [ErrNilTask]. On error the task was not
// accepted and never runs.
//
// A task of k that submits to k while k's bounded queue is full waits like any other
// submitter, and no wait runs a keyed task on its caller: if the tasks waiting are its own
// key's, which cannot start before it returns, the submit waits until the pool stops. Tasks
// that submit to their own Keyed should use [Keyed.TrySubmit] or [Keyed.SubmitContext].
//
// What the caller did before Submit happens before the task starts. A panic in the task goes
// to the pool's panic handler ([WithPanicHandler]); the key's next task still runs, as it
// does after a task that calls runtime.Goexit.
//
// Like a map index, Submit (and TrySubmit and SubmitContext) panics if key holds a value that
// cannot be compared, such as a slice in an interface-typed key; k is then left as it was.
func (k *Keyed[K]) Submit(key K, task func()) error {
	if task == nil {
		return ErrNilTask
	}
	return k.submit(key, task, !k.nonBlocking, nil)
}

// TrySubmit queues task if it can do so without blocking and reports whether it did. It
// returns false when the Keyed's bounded queue is full, the pool is stopped or task is nil;
// the task then never runs. See [Keyed.Submit].
func (k *Keyed[K]) TrySubmit(key K, task func()) bool {
	return task != nil && k.submit(key, task, false, nil) == nil
}

// SubmitContext is [Keyed.Submit] that gives up waiting for room in a full queue when ctx
// ends. It then returns an error that matches ctx.Err() under [errors.Is], and the task never
// runs. If ctx has already ended, it returns that error at once without accepting the task.
func (k *Keyed[K]) SubmitContext(ctx context.Context, key K, task func()) error {
	if ctx == nil {
		panic("crew: Keyed.SubmitContext: ctx must not be nil")
	}
	if task == nil {
		return ErrNilTask
	}
	return k.submit(key, task, !k.nonBlocking, ctx)
}

// Wait blocks until every task accepted by k so far has finished, including tasks accepted
// while it waits. The return of each task synchronizes before the return of the Wait call
// that waits for it. Calling Wait from a task of k never returns.
func (k *Keyed[K]) Wait() {
	k.mu.Lock()
	if k.pending == 0 {
		k.mu.Unlock()
		return
	}
	if k.drained == nil {
		k.drained = make(chan struct{})
	}
	ch := k.drained
	k.mu.Unlock()
	<-ch
}

// submit accepts task for key, waiting for room in a full bounded queue if wait is set,
// until ctx (which may be nil) ends or the pool stops. It calls the pool's Queued and
// Rejected hooks, as the pool's own submits do (see admit).
func (k *Keyed[K]) submit(key K, task func(), wait bool, ctx context.Context) error {
	hashable(key)
	c := &k.p.core
	c.queued()
	err := k.enqueue(key, task, wait, ctx)
	if err != nil {
		c.rejected(err)
	}
	return err
}

// hashable panics, as a map index does, if key holds a value that cannot be a map key (a
// slice in an interface key): before any hook is called or lock taken, so that the panic
// leaves k as it was (TestAdvFKKeyedUnhashableKeyLeavesTheKeyedUsable). An index of a nil map
// looks at the key's type only, and not even that for a type whose every value hashes.
func hashable[K comparable](key K) {
	var m map[K]struct{}
	_ = m[key]
}

// enqueue is submit without the hooks.
func (k *Keyed[K]) enqueue(key K, task func(), wait bool, ctx context.Context) error {
	stopped := k.p.core.e.Done()
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	t := keyedTask{f: task}
	if obs := k.p.core.obs; obs != nil {
		t.at = obs.stamp(k.clock)
	}
	// A watched context (WithContext) may have ended a moment before its hook stops the
	// pools; a submit in between must not be accepted. Asked without k.mu: ended may stop
	// the pools itself.
	if k.p.core.ended() {
		return ErrStopped
	}
	k.p.core.poke() // as every submit of the pool does, under CPUs
	k.mu.Lock()
	for {
		if ctx != nil && ctx.Err() != nil {
			k.canceled++
			k.mu.Unlock()
			return fmt.Errorf("crew: submit canceled: %w", ctx.Err())
		}
		select {
		case <-stopped:
			k.mu.Unlock()
			return ErrStopped
		default:
		}
		if k.queueSize == 0 || k.waiting < k.queueSize {
			break
		}
		if !wait {
			k.rejected++
			k.mu.Unlock()
			return ErrQueueFull
		}
		if k.room == nil {
			k.room = make(chan struct{})
		}
		room := k.room
		k.mu.Unlock()
		select {
		case <-room:
		case <-stopped:
		case <-done:
		}
		if k.p.core.ended() {
			return ErrStopped
		}
		k.mu.Lock()
	}
	r := k.keys[key]
	if r != nil {
		r.push(t)
		k.accept()
		k.mu.Unlock()
		return nil
	}
	r = &keyRunner[K]{k: k, key: key}
	r.push(t)
	// The runner is admitted with k.mu held: a submit of the same key that finds it in the
	// map must be sure it will run. Admit never blocks and never calls back into k.
	if k.p.core.e.Admit(r) != worker.Accepted {
		k.mu.Unlock()
		return ErrStopped
	}
	if k.keys == nil {
		k.keys = make(map[K]*keyRunner[K])
	}
	k.keys[key] = r
	k.peak = max(k.peak, len(k.keys))
	k.accept()
	k.mu.Unlock()
	return nil
}

// Stats returns a consistent snapshot of the counters of k's own tasks, each keyed task
// counted once, whatever turns it took to run: Accepted counts the tasks k's submits
// accepted; Waiting those not yet started; Running those running; Completed and Panicked
// those that ended; Returned those [Pool.StopNow] took out and handed back, and Discarded
// those [DiscardOldest] dropped with their key's turn (they went to the discard handler);
// Rejected and Canceled count the submits refused by k's full bounded queue or ended by
// their context. Once k is idle, Accepted equals Completed + Panicked + Discarded +
// Returned. MaxWorkers and Paused are the pool's; Idle, CallerRan and Skipped are 0, since
// keyed tasks have no workers of their own and never run on their submitter, and the
// histograms are nil: the pool's own histograms count keyed tasks. It is safe for concurrent
// use and from a task.
func (k *Keyed[K]) Stats() Stats {
	k.p.core.sizing.check() // as Pool.Stats does: MaxWorkers follows GOMAXPROCS under CPUs
	pc := k.p.core.e.Counters()
	k.mu.Lock()
	defer k.mu.Unlock()
	return Stats{
		MaxWorkers: pc.MaxWorkers,
		Paused:     pc.Paused,
		Running:    k.running,
		Waiting:    k.waiting,
		Accepted:   k.accepted,
		Completed:  k.completed,
		Panicked:   k.panicked,
		Rejected:   k.rejected,
		Canceled:   k.canceled,
		Discarded:  k.discarded,
		Returned:   k.returned,
	}
}

// now reads the pool's clock.
func (k *Keyed[K]) now() time.Time {
	if now := k.p.core.cfg.now; now != nil {
		return now()
	}
	return time.Now()
}

// clock returns the time since k was made, for the hooks and histograms of a pool that
// observes its tasks.
func (k *Keyed[K]) clock() int64 { return int64(k.now().Sub(k.epoch)) }

// accept counts one accepted task. Callers hold k.mu.
func (k *Keyed[K]) accept() {
	k.accepted++
	k.waiting++
	k.pending++
}

// started counts the start of one task. Callers hold k.mu.
func (k *Keyed[K]) started() {
	k.waiting--
	k.running++
	k.freeRoom()
}

// freeRoom wakes the submitters waiting for room in the bounded queue, after tasks left it.
// Callers hold k.mu.
func (k *Keyed[K]) freeRoom() {
	if k.room != nil {
		close(k.room)
		k.room = nil
	}
}

// finished counts the end of one task that started. Callers hold k.mu.
func (k *Keyed[K]) finished(panicked bool) {
	k.running--
	if panicked {
		k.panicked++
	} else {
		k.completed++
	}
	k.settle()
}

// settle counts one accepted task as no longer pending. Callers hold k.mu.
func (k *Keyed[K]) settle() {
	k.pending--
	if k.pending == 0 && k.drained != nil {
		close(k.drained)
		k.drained = nil
	}
}

// forget frees the state of r's key, which has nothing queued or running. Callers hold k.mu.
//
// A Go map never gives back the buckets it grew, so a million keys busy at once would leave
// a million keys' worth of buckets behind after they are all done. The map is dropped once
// empty, and rebuilt when it has shrunk well below its peak, so that idle keys cost nothing
// (TestKeyedIdleKeysLeaveTheHeapAsItWas).
func (k *Keyed[K]) forget(r *keyRunner[K]) {
	delete(k.keys, r.key)
	n := len(k.keys)
	switch {
	case n == 0 && k.peak > 64:
		k.keys, k.peak = nil, 0
	case k.peak >= 4096 && n < k.peak/8:
		m := make(map[K]*keyRunner[K], n)
		for key, r := range k.keys {
			m[key] = r
		}
		k.keys, k.peak = m, n
	}
}

// keyRunner is one busy key: its waiting tasks, and the pool task that runs them in turns.
// It is in its Keyed's map exactly while it is queued on the pool or running.
type keyRunner[K comparable] struct {
	k     *Keyed[K]
	key   K
	tasks []keyedTask // waiting tasks, oldest at head
	head  int
}

// keyedTask is a task waiting in its key's runner, with its submit time (see Keyed.clock)
// when the pool observes its tasks.
type keyedTask struct {
	f  func()
	at int64
}

// push appends t to the waiting tasks. Callers hold k.mu.
func (r *keyRunner[K]) push(t keyedTask) {
	if r.head > 0 && r.head == len(r.tasks) {
		r.tasks, r.head = r.tasks[:0], 0
	}
	r.tasks = append(r.tasks, t)
}

// pop takes the oldest waiting task; ok is false if none waits. Callers hold k.mu.
func (r *keyRunner[K]) pop() (t keyedTask, ok bool) {
	if r.head == len(r.tasks) {
		return t, false
	}
	t = r.tasks[r.head]
	r.tasks[r.head] = keyedTask{}
	r.head++
	if r.head == len(r.tasks) {
		r.tasks, r.head = r.tasks[:0], 0
	} else if r.head >= 32 && r.head*2 >= len(r.tasks) {
		n := copy(r.tasks, r.tasks[r.head:])
		clear(r.tasks[n:])
		r.tasks, r.head = r.tasks[:n], 0
	}
	return t, true
}

func (r *keyRunner[K]) abort(error) bool { return false }

// observedInside marks a key's runner as a task that the pool's hooks and histograms do not
// see: the runner reports each keyed task it runs itself (see run).
func (r *keyRunner[K]) observedInside() {}

// unpack takes the key's waiting tasks out, unrun, for StopNow (dropped false: they count as
// returned) or DiscardOldest (dropped true: they count as discarded, and the pool's
// Discarded hooks see each when the caller calls the func returned, after the discard
// handler), which took the runner out of the pool's queue. They end without running, and the
// key's state is freed.
func (r *keyRunner[K]) unpack(dropped bool) ([]func(), func()) {
	k := r.k
	obs := k.p.core.obs
	k.mu.Lock()
	out := make([]func(), 0, len(r.tasks)-r.head)
	var waits []time.Duration
	for t, ok := r.pop(); ok; t, ok = r.pop() {
		out = append(out, t.f)
		k.waiting--
		if dropped {
			k.discarded++
		} else {
			k.returned++
		}
		k.settle()
		if dropped && obs != nil && t.at != worker.Unsampled {
			waits = append(waits, time.Duration(max(0, k.clock()-t.at)))
		}
	}
	k.forget(r)
	k.freeRoom()
	k.mu.Unlock()
	if len(waits) == 0 {
		return out, nil
	}
	return out, func() {
		for _, w := range waits {
			obs.discard(w)
		}
	}
}

// run is the key's turn on a worker: it runs up to keyBatch of the key's tasks one after
// another, then queues itself again if more wait, or frees the key's state.
//
// A task's panic is recovered here and given to the pool's panic handler before the task
// counts as finished, so Wait returns only after the handler has, as it does for the pool's
// own tasks; the turn goes on with the key's next task. Under WithoutPanicRecovery the panic
// is left to end the program. A task that calls runtime.Goexit, or whose hook or panic
// handler does, ends the turn early: the deferred end counts the task (as panicked if it
// panicked) and queues the runner again, so the key does not wedge
// (TestKeyedPanicAndGoexitDoNotWedgeTheKey, TestGoexitInEachHookOnEachDoor).
func (r *keyRunner[K]) run() worker.Outcome {
	k := r.k
	k.mu.Lock()
	t, _ := r.pop()
	k.started()
	k.mu.Unlock()
	returned, panicked := false, false
	defer func() {
		if !returned {
			r.end(panicked)
		}
	}()
	for n := 1; ; n++ {
		r.one(t, &panicked)
		// The next keyed task starts only as a task of the pool would start now: not while
		// the pool is paused, over a lowered limit, out of rate tokens or behind a higher
		// priority (worker.Engine.GoesOn). Otherwise the turn ends, and the runner waits in
		// the pool's queue like any task.
		if n == keyBatch {
			returned = true
			r.end(panicked)
			return worker.Completed
		}
		// With nothing waiting, the key's state goes in the same step as the look: a task
		// submitted after it finds no runner and queues a new one, which the pool starts as
		// any task, rather than being taken by this turn unasked.
		// GoesOn is asked with k.mu held, as enqueue admits a runner: locks go Keyed, then
		// the pool's engine.
		k.mu.Lock()
		if r.head == len(r.tasks) {
			k.finished(panicked)
			k.forget(r)
			k.mu.Unlock()
			returned = true
			return worker.Completed
		}
		if !k.p.core.e.GoesOn() {
			k.mu.Unlock()
			returned = true
			r.end(panicked)
			return worker.Completed
		}
		k.finished(panicked)
		t, _ = r.pop()
		k.started()
		k.mu.Unlock()
	}
}

// one runs t with the pool's Started and Finished hooks and gives its panic to the panic
// handler after Finished. It sets *panicked as soon as t has ended, so that a Finished hook
// or a panic handler that calls runtime.Goexit leaves t counted as it ended (see run).
func (r *keyRunner[K]) one(t keyedTask, panicked *bool) {
	k := r.k
	c := &k.p.core
	*panicked = false
	var start int64
	ended := false // t returned or panicked: Finished is told below, not by the defer
	// A task that WithLatencySample leaves out is not timed, and the observer not told of it.
	timed := c.obs != nil && t.at != worker.Unsampled
	if timed {
		start = k.clock()
		c.obs.start(time.Duration(max(0, start-t.at)))
		// t may call runtime.Goexit, which no catch stops: its Finished hook is called as the
		// goroutine unwinds, as for a task of the pool's own
		// (TestKeyedTaskThatCallsGoexitIsFinished).
		defer func() {
			if !ended {
				c.obs.Finished(time.Duration(max(0, start-t.at)), time.Duration(max(0, k.clock()-start)), false)
			}
		}()
	}
	var pe *PanicError
	if c.cfg.noRecover {
		t.f()
	} else {
		pe = catch(t.f)
	}
	ended = true
	*panicked = pe != nil
	if timed {
		c.obs.Finished(time.Duration(max(0, start-t.at)), time.Duration(max(0, k.clock()-start)), pe != nil)
	}
	if pe != nil {
		report(c.cfg.panicHandler, pe)
	}
}

// end counts the end of the task the runner ran last, and queues the runner again if the key
// has more tasks, or frees the key's state.
func (r *keyRunner[K]) end(panicked bool) {
	k := r.k
	k.mu.Lock()
	k.finished(panicked)
	more := r.head < len(r.tasks)
	if !more {
		k.forget(r)
	}
	k.mu.Unlock()
	if more {
		// The runner is a running task of the pool, so the pool cannot have exited: Forward
		// accepts it even after Stop, as the key's tasks were accepted.
		k.p.core.e.Forward(r)
	}
}
