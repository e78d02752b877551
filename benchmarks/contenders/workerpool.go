package contenders

import "github.com/gammazero/workerpool"

// gammazero/workerpool: Submit never blocks (its queue is unbounded); StopWait runs every
// queued task, then stops the workers.
func init() {
	register(Contender{Name: "workerpool", New: func(workers int) Runner {
		return gammazero{workerpool.New(workers)}
	}})
}

type gammazero struct{ p *workerpool.WorkerPool }

func (r gammazero) Submit(task func()) error { r.p.Submit(task); return nil }
func (r gammazero) StopAndWait()             { r.p.StopWait() }
