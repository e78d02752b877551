package contenders

import "github.com/crewgo/crew"

// crew.Pool: a task is a func(). crew.FuncPool: every task is an argument of one function; here
// the argument is the task itself, so the typed path carries exactly the same work.
func init() {
	register(Contender{Name: "crew", Kind: Crew, New: func(workers int) Runner {
		return crewPool{crew.New(workers)}
	}})
	register(Contender{Name: "crew-func", Kind: Crew, New: func(workers int) Runner {
		return crewFunc{crew.NewFunc(workers, func(task func()) { task() })}
	}})
}

type crewPool struct{ p *crew.Pool }

func (r crewPool) Submit(task func()) error { return r.p.Submit(task) }
func (r crewPool) StopAndWait()             { r.p.StopAndWait() }

type crewFunc struct{ p *crew.FuncPool[func()] }

func (r crewFunc) Submit(task func()) error { return r.p.Invoke(task) }
func (r crewFunc) StopAndWait()             { r.p.StopAndWait() }
