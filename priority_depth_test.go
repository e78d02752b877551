package crew_test

import (
	"sync"
	"testing"

	"github.com/crewgo/crew"
)

// WithPriority: "whenever one of the parent's workers takes a task, it takes one of the
// highest level waiting, so no task of a higher level is waiting when a lower-level one
// starts". A sub-pool of a level-0 sub-pool runs at level 0 in the root; a level-5 task
// queued in the root must start before the grandchild's next task.
func TestSubPoolOfASubPoolYieldsToAHigherLevelAboveIt(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		name := "plain"
		if keyed {
			name = "keyed"
		}
		t.Run(name, func(t *testing.T) {
			root := crew.New(1)
			defer root.StopAndWait()
			mid := root.Sub(1, crew.WithPriority(0))
			high := root.Sub(1, crew.WithPriority(5))
			leaf := mid.Sub(1)
			var mu sync.Mutex
			var order []string
			rec := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
			gate := make(chan struct{})
			first := make(chan struct{})
			if keyed {
				k := crew.NewKeyed[int](leaf)
				must(t, k.Submit(0, func() { rec("A"); close(first); <-gate }))
				must(t, k.Submit(0, func() { rec("B") }))
				must(t, k.Submit(0, func() { rec("C") }))
			} else {
				must(t, leaf.Submit(func() { rec("A"); close(first); <-gate }))
				must(t, leaf.Submit(func() { rec("B") }))
				must(t, leaf.Submit(func() { rec("C") }))
			}
			awaitReturn(t, "A", first)
			must(t, high.Submit(func() { rec("HIGH") }))
			awaitStats(t, root, "the high sub-pool's worker waiting in the root", func(s crew.Stats) bool { return s.Waiting == 1 })
			close(gate)
			awaitReturn(t, "root.Wait", goRun(root.Wait))
			mu.Lock()
			defer mu.Unlock()
			if len(order) != 4 || order[1] != "HIGH" {
				t.Errorf("start order %v: a level-0 task (of a sub-pool of a level-0 sub-pool) started while a level-5 task waited in the root", order)
			}
		})
	}
}
