package worker

// Resize sets the worker limit to n and returns at once. From its return no task starts while
// n or more run; tasks already running finish, so Running may stay above n until they do.
// Idle workers above the limit exit now and busy ones when their task returns. When the limit
// grows, queued tasks start at once.
func (e *Engine[T]) Resize(n int) {
	e.mu.Lock()
	e.max = n
	e.reopen()
	var dismissed []*worker[T]
	if extra := e.workers - n; extra > 0 {
		dismissed = e.dismissOldest(min(extra, len(e.idle)))
	}
	starts := e.dispatch()
	e.mu.Unlock()
	wakeAll(dismissed)
	e.launchAll(starts)
}
