package contenders

import "golang.org/x/sync/errgroup"

// errgroup with SetLimit: a new goroutine per task, Go blocking while the limit is reached.
func init() {
	register(Contender{Name: "errgroup", New: func(workers int) Runner {
		g := new(errgroup.Group)
		g.SetLimit(workers)
		return errGroup{g}
	}})
}

type errGroup struct{ g *errgroup.Group }

func (r errGroup) Submit(task func()) error {
	r.g.Go(func() error { task(); return nil })
	return nil
}

func (r errGroup) StopAndWait() { _ = r.g.Wait() }
