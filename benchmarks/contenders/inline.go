package contenders

// Inline is the name of the inline reference: Submit runs the task on the submitting goroutine
// and returns when it has finished. There is no pool, no queue and no hand-off, so with tasks
// that only compute it is what the workload costs with nothing in between: on the submitters'
// goroutines when they are many, and on one goroutine when one submitter hands over tasks too
// small to be worth handing to another. It is no floor for tasks that sleep, whose sleeps a
// submitter waits out one after another where a pool's workers overlap them, and it runs more
// tasks at once than the limit allows when more goroutines submit than there are workers; the
// suites leave it out of both kinds of workload.
const Inline = "inline"

func init() {
	register(Contender{Name: Inline, Kind: Floor, New: func(int) Runner { return inline{} }})
}

type inline struct{}

func (inline) Submit(task func()) error {
	task()
	return nil
}

func (inline) StopAndWait() {}
