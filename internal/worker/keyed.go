package worker

// Admit accepts arg whatever the queue bound, unless the engine is stopped. Keyed pools use
// it to queue a key's runner: the keyed backlog is bounded by the keyed pool itself, and a
// runner refused by a full queue would leave its key's accepted tasks without a runner.
func (e *Engine[T]) Admit(arg T) Result {
	at, ok := e.lockToSubmit()
	if !ok {
		return Stopped
	}
	s, _ := e.route(arg, false, at)
	e.mu.Unlock()
	e.launch(s)
	return Accepted
}

// Done returns a channel closed by Stop.
func (e *Engine[T]) Done() <-chan struct{} { return e.done }
