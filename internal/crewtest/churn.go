package crewtest

import (
	"sync"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// Repeat starts a goroutine, counted by wg, that calls op(0), op(1), ... until stop is
// closed: a storm of one operation, such as Pause and Resume, Resize or a Stats check, beside
// the traffic of a test. stop is read before each call, so op runs no more once stop is closed
// and the call in progress has returned.
func Repeat(wg *sync.WaitGroup, stop <-chan struct{}, op func(i int)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !closed(stop); i++ {
			op(i)
		}
	}()
}

// closed reports, without blocking, whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Churn is [Repeat] with a stop of its own: it starts a goroutine that calls op(0), op(1),
// ... until the returned end is called, or t ends. end returns once op has returned for the
// last time, failing t, which names the goroutine what, if that takes more than 10 s; call it
// from the test's goroutine.
func Churn(t testing.TB, what string, op func(i int)) (end func()) {
	stop := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	Repeat(&wg, stop, op)
	t.Cleanup(func() { once.Do(func() { close(stop) }); wg.Wait() }) // a test that failed early
	return func() {
		t.Helper()
		once.Do(func() { close(stop) })
		Recv(t, what+" to stop", Go(wg.Wait))
	}
}

// TreeChurn returns an op for Repeat or Churn that churns a tree of pools: root, its sub-pool
// sub and sub's sub-pool subsub. Its step i pauses root, resumes root and resizes it to 1 to 3,
// pauses sub and resizes subsub to 1 or 2, or resumes sub and resizes it to 1 or 2, in turn;
// then it sleeps 50 µs, so that tasks start between steps. The churn may end with root or sub
// paused: resume both once it has ended.
func TreeChurn(root, sub, subsub *crew.Pool) func(i int) {
	return func(i int) {
		switch i % 4 {
		case 0:
			root.Pause()
		case 1:
			root.Resume()
			root.Resize(1 + i%3)
		case 2:
			sub.Pause()
			subsub.Resize(1 + i%2)
		case 3:
			sub.Resume()
			sub.Resize(1 + i%2)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// TreeChurnSmall is [TreeChurn] with other steps, which keep sub and subsub small: step i
// pauses root and resizes sub to 1 or 2, resumes root, resizes it to 1 to 3 and pauses sub, or
// resumes sub and resizes subsub to 1, in turn; then it sleeps 100 µs.
func TreeChurnSmall(root, sub, subsub *crew.Pool) func(i int) {
	return func(i int) {
		switch i % 3 {
		case 0:
			root.Pause()
			sub.Resize(2 - i%2)
		case 1:
			root.Resume()
			root.Resize(1 + i%3)
			sub.Pause()
		case 2:
			sub.Resume()
			subsub.Resize(1)
		}
		time.Sleep(100 * time.Microsecond)
	}
}
