package worker

import "runtime"

// lockYields is how many times lock yields its processor, trying the mutex after each yield,
// before it waits in Lock like any other caller.
const lockYields = 4

// yield gives up the processor; tests replace it to count the yields.
var yield = runtime.Gosched

// lock takes e.mu on the hot path: in Submit and Forward, and in a worker's begin, next and
// goexit.
//
// Plain e.mu.Lock convoys under load. sync.Mutex parks a goroutine that finds it locked
// whenever that goroutine's processor has other goroutines to run, and once a parked waiter
// has waited a millisecond the mutex turns to starvation mode, in which Unlock hands the lock
// straight to that waiter. In a process with thousands of runnable goroutines (pond's 10,000
// users, each submitting a 10 ms task every 10 ms) the waiter takes far longer to get a
// processor than the lock is ever held, so the lock sits owned by a goroutine that is not
// running while every submitter and worker queues behind it; each of them then waits more
// than a millisecond too, which keeps the mutex in starvation mode. Some runs of that workload
// took about twice as long as others, with lock handoffs the difference between the profiles
// (measurements.md).
//
// So lock tries the mutex, and while it is taken yields the processor and tries again, up to
// lockYields times. The holder keeps the lock for tens of nanoseconds, so it is usually free
// by then, and a goroutine that never parks in Lock never starts the handoff. A caller that
// fails lockYields times waits in Lock, where the mutex's own fairness bounds how long it is
// passed over. TestLockYieldsBeforeWaiting guards this; BenchmarkPond's 10Ku-100t workload
// and BenchmarkSubmit/workers=1024 measure it.
func (e *Engine[T]) lock() {
	if e.mu.TryLock() {
		return
	}
	for range lockYields {
		yield()
		if e.mu.TryLock() {
			return
		}
	}
	e.mu.Lock()
}
