package contenders

import (
	"errors"
	"sync"
)

// The static floor: exactly workers goroutines, started when the runner is made (the suites
// make it before the clock starts), each running its share of the tasks in a plain loop, with
// no queue and no hand-off per task. It is what the work costs on that many goroutines with
// every scheduling decision made up front: a reference for the pools, not a pool.
func init() {
	register(Contender{Name: "static-floor", Kind: Floor, New: newFloor})
}

type floor struct {
	shares []chan floorShare
	wg     sync.WaitGroup // the goroutines themselves
	done   sync.WaitGroup // the shares of the current Run
}

type floorShare struct {
	n    int
	task func()
}

func newFloor(workers int) Runner {
	f := &floor{shares: make([]chan floorShare, workers)}
	f.wg.Add(workers)
	for i := range f.shares {
		ch := make(chan floorShare, 1)
		f.shares[i] = ch
		go func() {
			defer f.wg.Done()
			for s := range ch {
				for range s.n {
					s.task()
				}
				f.done.Done()
			}
		}()
	}
	return f
}

// errFloorSubmit is returned by Submit: the floor only takes whole workloads, through Run.
var errFloorSubmit = errors.New("contenders: static-floor takes whole workloads through Run")

func (f *floor) Submit(func()) error { return errFloorSubmit }

// Run gives each goroutine total/workers tasks (the first total%workers get one more) and
// waits for all of them.
func (f *floor) Run(total int, task func()) {
	w := len(f.shares)
	f.done.Add(w)
	for i, ch := range f.shares {
		n := total / w
		if i < total%w {
			n++
		}
		ch <- floorShare{n: n, task: task}
	}
	f.done.Wait()
}

func (f *floor) StopAndWait() {
	for _, ch := range f.shares {
		close(ch)
	}
	f.wg.Wait()
}
