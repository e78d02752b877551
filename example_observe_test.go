package crew_test

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/crewgo/crew"
)

func ExampleWithHooks() {
	var queued, started, finished, slow atomic.Int32
	p := crew.New(2, crew.WithHooks(crew.Hooks{
		Queued:  func(crew.TaskInfo) { queued.Add(1) },
		Started: func(crew.TaskInfo) { started.Add(1) },
		Finished: func(ti crew.TaskInfo) {
			finished.Add(1)
			if ti.Run > time.Hour {
				slow.Add(1)
			}
		},
	}))
	for range 5 {
		_ = p.Submit(func() {})
	}
	p.StopAndWait()
	fmt.Println(queued.Load(), started.Load(), finished.Load(), slow.Load())
	// Output: 5 5 5 0
}

func ExampleWithLatencyHistograms() {
	p := crew.New(4, crew.WithLatencyHistograms())
	for range 100 {
		_ = p.Submit(func() {})
	}
	p.StopAndWait()
	s := p.Stats()
	fmt.Println("tasks timed:", s.WaitTime.Count, s.RunTime.Count)
	fmt.Println("one more boundary than counts:", len(s.RunTime.Buckets) == len(s.RunTime.Counts)+1)
	// Output:
	// tasks timed: 100 100
	// one more boundary than counts: true
}
