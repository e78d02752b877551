package worker

import "time"

// reap is the reaper goroutine. park starts it when a worker parks while more than MinWorkers
// workers are alive (and IdleTimeout is above 0), and it sleeps until the longest-idle worker's
// deadline instead of ticking (TestReaperSleepsUntilTheNextDeadline).
// Taking an idle worker for a task does not stop it: it exits at its next deadline once no idle
// worker is left to watch (each was dismissed or taken again) or no more than MinWorkers
// workers are alive. So a pool whose idle workers have all gone back to work keeps the reaper
// for up to one IdleTimeout more. TestReaperExitsOnceIdleWorkersAreTakenAgain guards it.
func (e *Engine[T]) reap() {
	unlabel()
	timer := time.NewTimer(e.cfg.IdleTimeout)
	defer timer.Stop()
	for {
		select {
		case <-e.done:
			e.mu.Lock()
			e.reaping = false
			e.checkExited()
			e.mu.Unlock()
			return
		case <-timer.C:
		}
		e.mu.Lock()
		dismissed, wait := e.evictIdle(e.clock())
		if wait < 0 {
			e.reaping = false
			// The reaper may be the last goroutine of a stopped engine: the timer can win
			// the select over a closed done. TestStopAndWaitReturnsWhenReaperIsLast.
			e.checkExited()
		}
		e.mu.Unlock()
		wakeAll(dismissed)
		if wait < 0 {
			return
		}
		timer.Reset(wait)
	}
}

// ReapIdle dismisses the workers that have been idle for IdleTimeout or longer at now, keeping
// MinWorkers, and returns how many it dismissed. The reaper calls the same code with the
// clock; tests call it with a time of their choosing.
func (e *Engine[T]) ReapIdle(now time.Time) int {
	e.mu.Lock()
	dismissed, _ := e.evictIdle(int64(now.Sub(e.epoch)))
	e.mu.Unlock()
	wakeAll(dismissed)
	return len(dismissed)
}

// evictIdle dismisses expired idle workers and returns them (to be woken after unlocking)
// with how long until the next one expires, or -1 if no idle worker is left to watch. now is
// a reading of the engine's clock. Callers hold e.mu.
func (e *Engine[T]) evictIdle(now int64) ([]*worker[T], time.Duration) {
	if e.cfg.IdleTimeout < 0 { // never
		return nil, -1
	}
	k := 0
	for k < len(e.idle) && e.workers-k > e.cfg.MinWorkers &&
		time.Duration(now-e.idle[k].idleSince) >= e.cfg.IdleTimeout {
		k++
	}
	dismissed := e.dismissOldest(k)
	if len(e.idle) == 0 || e.workers <= e.cfg.MinWorkers {
		return dismissed, -1
	}
	return dismissed, e.cfg.IdleTimeout - time.Duration(now-e.idle[0].idleSince)
}
