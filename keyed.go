package crew

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"

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
// A Keyed keeps its waiting tasks itself, not in the pool's queue: the pool's [Stats] count
// each turn a key takes on a worker (which runs one or a few of its tasks) as one task, and
// the pool's [WithQueueSize] does not bound keyed tasks; NewKeyed's own [WithQueueSize] does.
// The pool's [Pool.Wait], [Pool.StopAndWait] and [Pool.Shutdown] wait for accepted keyed
// tasks too.
//
// A Keyed is safe for concurrent use. The zero value is not usable.
type Keyed[K comparable] struct {
	p           *Pool
	queueSize   int
	nonBlocking bool

	mu      sync.Mutex
	keys    map[K]*keyRunner[K]
	peak    int           // the most keys busy at once since keys was made; see forget
	waiting int           // accepted tasks not started, over all keys
	pending int           // accepted tasks not finished
	drained chan struct{} // closed when pending reaches 0; made on demand
	room    chan struct{} // closed when a task starts while the queue is bounded; made on demand
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
// unbounded. It panics if p is nil or another option is given: the pool's options decide
// everything else.
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
	if c.minWorkers != 0 || c.idleTimeout != -1 || c.panicHandler != nil || c.ctx != nil || c.now != nil || c.prioritySet || c.noRecover ||
		c.hooks != nil || c.histograms || (c.overflow != Block && c.overflow != Reject) || c.maxWait != 0 || c.limitBlocked ||
		c.discard != nil || c.rateSet {
		panic("crew: NewKeyed: only WithQueueSize and WithNonBlocking apply to a Keyed")
	}
	return &Keyed[K]{p: p, queueSize: c.queueSize, nonBlocking: c.nonBlocking || c.overflow == Reject}
}

// Submit queues task to run after every task submitted earlier with the same key. A nil
// error means the task was accepted and will run exactly once, even if the pool is stopped
// afterwards. Submit blocks only while the Keyed's bounded queue is full ([WithQueueSize] on
// [NewKeyed]); under [WithNonBlocking] it returns [ErrQueueFull] instead. After the pool is
// stopped it returns [ErrStopped]; for a nil task, [ErrNilTask]. On error the task was not
// accepted and never runs.
//
// What the caller did before Submit happens before the task starts. A panic in the task goes
// to the pool's panic handler ([WithPanicHandler]); the key's next task still runs, as it
// does after a task that calls runtime.Goexit.
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
	if ctx.Err() != nil {
		return fmt.Errorf("crew: submit canceled: %w", ctx.Err())
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
// until ctx (which may be nil) ends or the pool stops.
func (k *Keyed[K]) submit(key K, task func(), wait bool, ctx context.Context) error {
	stopped := k.p.core.e.Done()
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	k.mu.Lock()
	for {
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
			return fmt.Errorf("crew: submit canceled: %w", ctx.Err())
		}
		k.mu.Lock()
	}
	r := k.keys[key]
	if r != nil {
		r.push(task)
		k.accept()
		k.mu.Unlock()
		return nil
	}
	r = &keyRunner[K]{k: k, key: key}
	r.push(task)
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

// accept counts one accepted task. Callers hold k.mu.
func (k *Keyed[K]) accept() {
	k.waiting++
	k.pending++
}

// started counts the start of one task. Callers hold k.mu.
func (k *Keyed[K]) started() {
	k.waiting--
	if k.room != nil {
		close(k.room)
		k.room = nil
	}
}

// finished counts the end of one task. Callers hold k.mu.
func (k *Keyed[K]) finished() {
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
	tasks []func() // waiting tasks, oldest at head
	head  int
}

// push appends t to the waiting tasks. Callers hold k.mu.
func (r *keyRunner[K]) push(t func()) {
	if r.head > 0 && r.head == len(r.tasks) {
		r.tasks, r.head = r.tasks[:0], 0
	}
	r.tasks = append(r.tasks, t)
}

// pop takes the oldest waiting task, or nil. Callers hold k.mu.
func (r *keyRunner[K]) pop() func() {
	if r.head == len(r.tasks) {
		return nil
	}
	t := r.tasks[r.head]
	r.tasks[r.head] = nil
	r.head++
	if r.head == len(r.tasks) {
		r.tasks, r.head = r.tasks[:0], 0
	} else if r.head >= 32 && r.head*2 >= len(r.tasks) {
		n := copy(r.tasks, r.tasks[r.head:])
		clear(r.tasks[n:])
		r.tasks, r.head = r.tasks[:n], 0
	}
	return t
}

func (r *keyRunner[K]) abort(error) bool { return false }

// unpack takes the key's waiting tasks out, unrun, for StopNow or DiscardOldest, which took
// the runner out of the pool's queue: they end without running, and the key's state is freed.
func (r *keyRunner[K]) unpack() []func() {
	k := r.k
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]func(), 0, len(r.tasks)-r.head)
	for t := r.pop(); t != nil; t = r.pop() {
		out = append(out, t)
		k.started()
		k.finished()
	}
	k.forget(r)
	return out
}

// run is the key's turn on a worker: it runs up to keyBatch of the key's tasks one after
// another, then queues itself again if more wait, or frees the key's state.
//
// A task's panic is recovered here and given to the pool's panic handler before the task
// counts as finished, so Wait returns only after the handler has, as it does for the pool's
// own tasks; the turn goes on with the key's next task. Under WithoutPanicRecovery the panic
// is left to end the program. A task that calls runtime.Goexit ends the turn early: the
// deferred end counts the task and queues the runner again, so the key does not wedge
// (TestKeyedPanicAndGoexitDoNotWedgeTheKey).
func (r *keyRunner[K]) run() {
	k := r.k
	k.mu.Lock()
	t := r.pop()
	k.started()
	k.mu.Unlock()
	returned := false
	defer func() {
		if !returned {
			r.end()
		}
	}()
	for n := 1; ; n++ {
		if k.p.core.cfg.noRecover {
			t()
		} else if pe := catch(t); pe != nil {
			k.p.handlePanic(pe)
		}
		if n == keyBatch {
			returned = true
			r.end()
			return
		}
		k.mu.Lock()
		k.finished()
		if t = r.pop(); t == nil {
			k.forget(r)
			k.mu.Unlock()
			returned = true
			return
		}
		k.started()
		k.mu.Unlock()
	}
}

// end counts the end of the task the runner ran last, and queues the runner again if the key
// has more tasks, or frees the key's state.
func (r *keyRunner[K]) end() {
	k := r.k
	k.mu.Lock()
	k.finished()
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

// handlePanic gives a recovered panic to p's panic handler on the calling goroutine. A handler
// that panics in turn is reported through the default handler.
func (p *Pool) handlePanic(pe *PanicError) {
	defer func() {
		if hv := recover(); hv != nil {
			worker.DefaultPanicHandler(hv, debug.Stack())
		}
	}()
	p.core.cfg.panicHandler(pe.Value, pe.Stack)
}
