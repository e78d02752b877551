package contenders

import (
	"sync"

	"github.com/bytedance/gopkg/util/gopool"
)

// bytedance gopool: Go never blocks (tasks wait in a linked list) and there is no way to wait
// for them, so the adapter counts them with a WaitGroup. gopool has no Stop; an idle pool's
// workers exit by themselves.
func init() {
	register(Contender{Name: "gopool", New: func(workers int) Runner {
		return &byteDance{p: gopool.NewPool("crewbench", int32(workers), gopool.NewConfig())}
	}})
}

type byteDance struct {
	p  gopool.Pool
	wg sync.WaitGroup
}

func (r *byteDance) Submit(task func()) error {
	r.wg.Add(1)
	r.p.Go(func() {
		task()
		r.wg.Done()
	})
	return nil
}

func (r *byteDance) StopAndWait() { r.wg.Wait() }
