package contenders

import "sync"

// bufferedQueue is the capacity of the buffered-channel baseline's channel.
const bufferedQueue = 1024

// The baselines: what code without a pool library does.
//   - goroutines: one goroutine per task and a WaitGroup; no limit at all.
//   - chan-unbuffered: workers goroutines reading an unbuffered channel.
//   - chan-buffered: the same with a channel of bufferedQueue slots.
func init() {
	register(Contender{Name: "goroutines", Kind: Unbounded, New: func(int) Runner { return new(goroutines) }})
	register(Contender{Name: "chan-unbuffered", New: func(workers int) Runner {
		return newChanWorkers(workers, 0)
	}})
	register(Contender{Name: "chan-buffered", New: func(workers int) Runner {
		return newChanWorkers(workers, bufferedQueue)
	}})
}

type goroutines struct{ wg sync.WaitGroup }

func (r *goroutines) Submit(task func()) error {
	r.wg.Add(1)
	go func() {
		task()
		r.wg.Done()
	}()
	return nil
}

func (r *goroutines) StopAndWait() { r.wg.Wait() }

type chanWorkers struct {
	tasks chan func()
	wg    sync.WaitGroup
}

func newChanWorkers(workers, buffer int) *chanWorkers {
	r := &chanWorkers{tasks: make(chan func(), buffer)}
	r.wg.Add(workers)
	for range workers {
		go func() {
			for task := range r.tasks {
				task()
			}
			r.wg.Done()
		}()
	}
	return r
}

func (r *chanWorkers) Submit(task func()) error { r.tasks <- task; return nil }

func (r *chanWorkers) StopAndWait() {
	close(r.tasks)
	r.wg.Wait()
}
