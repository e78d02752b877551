package crew_test

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// Keyed doc: "a turn goes on to the key's next task only if the pool would start a task then
// (not after Pause has returned ...)". Pause: once Pause has returned, no task starts.
// Here the key's next task is submitted just as the turn's running task ends (from a
// goroutine told by the Finished hook), after Pause has returned.
func TestKeyedTaskSubmittedAsATurnEndsStartsNoTaskAfterPause(t *testing.T) {
	deadline := time.Now().Add(8 * time.Second)
	bad := 0
	iters := 0
	for time.Now().Before(deadline) && bad == 0 {
		iters++
		var armed, fire, paused atomic.Bool
		spin := rand.IntN(400)
		p := crew.New(1, crew.WithHooks(crew.Hooks{Finished: func(crew.TaskInfo) {
			if armed.Load() {
				fire.Store(true)
				for i := 0; i < spin; i++ {
					_ = i * i
				}
			}
		}}))
		k := crew.NewKeyed[int](p)
		started := make(chan struct{})
		gate := make(chan struct{})
		must(t, k.Submit(0, func() { close(started); <-gate }))
		awaitReturn(t, "A to start", started)
		p.Pause()
		paused.Store(true)
		armed.Store(true)
		var violated atomic.Bool
		submitted := goRun(func() {
			for !fire.Load() {
			}
			must(t, k.Submit(0, func() {
				if paused.Load() {
					violated.Store(true)
				}
			}))
		})
		close(gate)
		awaitReturn(t, "B submitted", submitted)
		time.Sleep(200 * time.Microsecond)
		if violated.Load() {
			bad++
			t.Errorf("iteration %d: keyed task started while the pool was paused (Pause had returned, Resume not called); pool %+v keyed %+v", iters, p.Stats(), k.Stats())
		}
		paused.Store(false)
		p.Resume()
		awaitReturn(t, "k.Wait", goRun(k.Wait))
		p.StopAndWait()
	}
	t.Logf("%d iterations, %d violations", iters, bad)
}
