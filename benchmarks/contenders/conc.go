package contenders

import "github.com/sourcegraph/conc/pool"

// sourcegraph/conc's pool: Go blocks while WithMaxGoroutines goroutines are busy.
func init() {
	register(Contender{Name: "conc", New: func(workers int) Runner {
		return concPool{pool.New().WithMaxGoroutines(workers)}
	}})
}

type concPool struct{ p *pool.Pool }

func (r concPool) Submit(task func()) error { r.p.Go(task); return nil }
func (r concPool) StopAndWait()             { r.p.Wait() }
