package contenders

import (
	"sync"

	"github.com/panjf2000/ants/v2"
)

// ants/v2: Pool runs closures; PoolWithFuncGeneric runs one typed function. Neither waits for
// its tasks, so the adapters count them with a WaitGroup. Submit blocks while the pool is full
// (ants' default), as Submit does on pond, conc, errgroup and the channel baselines; crew's
// two pools, pond/v2, gopool and workerpool queue without limit instead, and the goroutines
// and inline baselines never wait.
func init() {
	register(Contender{Name: "ants", New: func(workers int) Runner {
		p, err := ants.NewPool(workers)
		mustOK("ants", err)
		return &antsPool{p: p}
	}})
	register(Contender{Name: "ants-func", New: func(workers int) Runner {
		r := &antsFunc{}
		p, err := ants.NewPoolWithFuncGeneric(workers, func(task func()) {
			task()
			r.wg.Done()
		})
		mustOK("ants-func", err)
		r.p = p
		return r
	}})
}

type antsPool struct {
	p  *ants.Pool
	wg sync.WaitGroup
}

func (r *antsPool) Submit(task func()) error {
	r.wg.Add(1)
	err := r.p.Submit(func() {
		task()
		r.wg.Done()
	})
	if err != nil {
		r.wg.Done()
	}
	return err
}

func (r *antsPool) StopAndWait() {
	r.wg.Wait()
	r.p.Release()
}

type antsFunc struct {
	p  *ants.PoolWithFuncGeneric[func()]
	wg sync.WaitGroup
}

func (r *antsFunc) Submit(task func()) error {
	r.wg.Add(1)
	err := r.p.Invoke(task)
	if err != nil {
		r.wg.Done()
	}
	return err
}

func (r *antsFunc) StopAndWait() {
	r.wg.Wait()
	r.p.Release()
}
