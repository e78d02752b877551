package contenders

// Inline is the name of the inline reference: Submit runs the task on the submitting goroutine
// and returns when it has finished. There is no pool, no queue and no hand-off, so with tasks
// that only compute it is what the workload costs with nothing in between: on the submitters'
// goroutines when they are many, and on one goroutine when one submitter hands over tasks too
// small to be worth handing to another. Such tasks hold a processor while they run, so no more
// of them run at once than there are processors, whatever the number of submitters. It is no
// floor for tasks that sleep, whose sleeps a submitter waits out one after another where a
// pool's workers overlap them; the suites leave it out of those.
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
