package crew

import "context"

// Pause stops tasks of the pool, and of its sub-pools, from starting until [Pool.Resume]:
// once Pause has returned, none starts. Tasks already running go on. A task starts when a
// worker takes it to run ([Stats] counts it in Running from then), or under [CallerRuns]
// when its submitter does; one taken just before Pause may enter its function a moment
// after Pause returns, as it would a moment after its start anyway. Submits are still
// accepted and wait in the queue (a bounded queue fills, and then the overflow policy
// applies, but [CallerRuns] waits for Resume before it runs a task on its submitter);
// [Pool.Wait] waits for them, so it does not return while tasks are queued on a
// paused pool. [Pool.Stop], [Pool.StopAndWait] and [Pool.Shutdown] resume the pool, since
// every accepted task must still run; [Pool.StopNow] abandons a paused backlog instead.
// Pause is idempotent, does nothing once the pool is stopped (a stopped pool runs its
// accepted tasks to the end), and is safe to call from a task and concurrently with any other
// method.
func (p *Pool) Pause() {
	checkPool(p, "Pause")
	p.core.e.Pause()
}

// PauseAndWait pauses the pool as [Pool.Pause] does, then waits until none of its tasks runs
// (its sub-pools' included, as they run on its workers). If ctx ends first it returns
// ctx.Err(), and the pool stays paused. Called from a task of the pool, it waits for that task
// too, and so returns only when ctx ends. As [Pool.Wait], it does not wait for a task that
// its submitter runs under [CallerRuns]; but none starts on a submitter while the pool is
// paused.
func (p *Pool) PauseAndWait(ctx context.Context) error {
	checkPool(p, "PauseAndWait")
	return p.core.pauseAndWait(ctx)
}

// Resume lets the tasks of a paused pool, and of its sub-pools, start again, in queue order.
// Resuming a pool that is not paused does nothing. A sub-pool resumed while its parent is
// paused stays held back by the parent.
func (p *Pool) Resume() {
	checkPool(p, "Resume")
	p.core.e.Resume()
}

// Pause stops calls from starting until Resume; see [Pool.Pause].
func (p *FuncPool[T]) Pause() {
	checkFuncPool(p, "Pause")
	p.core.e.Pause()
}

// PauseAndWait pauses the pool and waits until no call runs, or ctx ends; see
// [Pool.PauseAndWait].
func (p *FuncPool[T]) PauseAndWait(ctx context.Context) error {
	checkFuncPool(p, "PauseAndWait")
	return p.core.pauseAndWait(ctx)
}

// Resume lets calls start again; see [Pool.Resume].
func (p *FuncPool[T]) Resume() {
	checkFuncPool(p, "Resume")
	p.core.e.Resume()
}

func (c *core[T]) pauseAndWait(ctx context.Context) error {
	if ctx == nil {
		panic("crew: PauseAndWait: ctx must not be nil")
	}
	c.e.Pause()
	ch := c.e.Quiet()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
