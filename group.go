package crew

import (
	"context"
	"sync"
)

// Group runs functions on a pool as one unit of work: the first error cancels the group's
// context, and [Group.Wait] returns that error once every function has returned. Build one
// with [Pool.Group].
//
// A Group is safe for concurrent use. Many groups may share one pool, each with its own
// context; a group on a sub-pool ([Pool.Sub]) runs at most the sub-pool's limit of functions
// at a time.
type Group struct {
	p      *Pool
	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu  sync.Mutex
	err error
}

// Group returns a new group that runs its functions on p, and the context they receive: it is
// derived from ctx and canceled at the first error, with that error as its [context.Cause], or
// when Wait returns.
func (p *Pool) Group(ctx context.Context) (*Group, context.Context) {
	g := new(Group)
	return g, g.init(p, ctx)
}

// init sets g up to run on p with a context derived from ctx, and returns that context.
func (g *Group) init(p *Pool, ctx context.Context) context.Context {
	g.p = p
	g.ctx, g.cancel = context.WithCancelCause(ctx)
	return g.ctx
}

// Go runs fn on the group's pool with the group's context. Like [Pool.Submit], it blocks only
// while a bounded queue is full. Every function the pool accepts runs, even one that has not
// started when the context is canceled: it then sees the canceled context, and should return
// early. If the pool does not accept fn (it is stopped, or its non-blocking queue is full), fn
// never runs and the refusal ([ErrStopped], [ErrQueueFull]) counts as the group's error, as
// does [ErrNilTask] for a nil fn. A panic in fn is the group's error as a [*PanicError].
//
// Go after Wait has returned still runs fn, with the canceled context; a later Wait waits for
// it. Go allocates one small task per call (BenchmarkGroupGo).
func (g *Group) Go(fn func(ctx context.Context) error) {
	if fn == nil {
		g.fail(ErrNilTask)
		return
	}
	g.submit(&groupTask{g: g, fn: fn})
}

// submit runs t on the group's pool, counting it until it is done.
func (g *Group) submit(t task) {
	g.wg.Add(1)
	if err := g.p.core.submit(t, true); err != nil {
		g.fail(err)
		g.wg.Done()
	}
}

// Wait blocks until every function started by Go has returned, cancels the group's context,
// and returns the first error (nil if there was none). The return of every function
// synchronizes before the return of Wait.
func (g *Group) Wait() error {
	g.wg.Wait()
	g.cancel(nil)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// fail records err if it is the group's first, and cancels the group's context.
func (g *Group) fail(err error) {
	g.mu.Lock()
	if g.err == nil {
		g.err = err
	}
	g.mu.Unlock()
	g.cancel(err)
}

// guard runs fn with the group's context and reports its error, or the panic or Goexit that
// kept it from returning, as the group's; then it counts the function as done.
func (g *Group) guard(fn func(context.Context) error) {
	returned := false
	defer func() {
		if !returned {
			g.fail(recovered(recover()))
		}
		g.wg.Done()
	}()
	err := fn(g.ctx)
	returned = true
	if err != nil {
		g.fail(err)
	}
}

type groupTask struct {
	g  *Group
	fn func(context.Context) error
}

func (t *groupTask) run() { t.g.guard(t.fn) }

// Results runs functions that return values on a pool and gives the values back in the order
// the functions were submitted, whatever order they finish in. Like [Group], the first error
// cancels the shared context and is returned by Wait. Build one with [NewResults].
//
// A Results is safe for concurrent use; when Go is called from several goroutines, the order
// of the values is the order in which the Go calls took effect.
type Results[R any] struct {
	g     Group
	mu    sync.Mutex
	tasks []*resultTask[R]
}

// NewResults returns a new Results that runs its functions on p, and the context they receive:
// derived from ctx and canceled at the first error, with that error as its [context.Cause], or
// when Wait returns.
func NewResults[R any](ctx context.Context, p *Pool) (*Results[R], context.Context) {
	r := new(Results[R])
	return r, r.g.init(p, ctx)
}

// Go runs fn on the pool with the shared context and keeps its value in submission order. It
// behaves as [Group.Go]: it blocks only while a bounded queue is full, every accepted function
// runs, and a refusal, an error or a panic ([*PanicError]) is the first error if none came
// before. Go allocates one result holder per call (BenchmarkResultsGo).
func (r *Results[R]) Go(fn func(ctx context.Context) (R, error)) {
	t := &resultTask[R]{g: &r.g, fn: fn}
	r.mu.Lock()
	r.tasks = append(r.tasks, t)
	r.mu.Unlock()
	if fn == nil {
		r.g.fail(ErrNilTask)
		return
	}
	r.g.submit(t)
}

// Wait blocks until every function has returned, cancels the shared context, and returns
// their values in submission order with the first error. A function that failed, panicked or
// never ran leaves the zero value in its place. The return of every function synchronizes
// before the return of Wait.
func (r *Results[R]) Wait() ([]R, error) {
	err := r.g.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	vals := make([]R, len(r.tasks))
	for i, t := range r.tasks {
		vals[i] = t.val
	}
	return vals, err
}

type resultTask[R any] struct {
	g   *Group
	fn  func(context.Context) (R, error)
	val R
}

func (t *resultTask[R]) run() {
	t.g.guard(func(ctx context.Context) error {
		v, err := t.fn(ctx)
		if err == nil {
			t.val = v
		}
		return err
	})
}
