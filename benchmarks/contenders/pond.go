package contenders

import (
	pondv1 "github.com/alitto/pond"
	pondv2 "github.com/alitto/pond/v2"
)

// pondQueue is the buffer pond v1 is given: its tasks channel holds that many waiting tasks
// before Submit blocks.
const pondQueue = 1024

// pond v1 and pond/v2. v2's Go submits without creating a Task future, the cheapest way to
// run a func() on it.
func init() {
	register(Contender{Name: "pond", New: func(workers int) Runner {
		return pond1{pondv1.New(workers, pondQueue)}
	}})
	register(Contender{Name: "pond-v2", New: func(workers int) Runner {
		return pond2{pondv2.NewPool(workers)}
	}})
}

type pond1 struct{ p *pondv1.WorkerPool }

func (r pond1) Submit(task func()) error { r.p.Submit(task); return nil }
func (r pond1) StopAndWait()             { r.p.StopAndWait() }

type pond2 struct{ p pondv2.Pool }

func (r pond2) Submit(task func()) error { return r.p.Go(task) }
func (r pond2) StopAndWait()             { r.p.StopAndWait() }
