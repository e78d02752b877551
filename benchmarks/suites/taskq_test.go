package suites

import (
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// smallJSON is the document TaskQ's CPU task decodes.
var smallJSON = []byte(`{"key1":"val1","key2":"val2"}`)

func unmarshalSmallJSON() {
	m := make(map[string]any)
	if err := json.Unmarshal(smallJSON, &m); err != nil {
		panic(err)
	}
}

// taskqTasks are TaskQ's tasks: CPU, I/O then CPU, and I/O of four lengths.
var taskqTasks = []namedTask{
	{"json", unmarshalSmallJSON, false},
	{"sleep50ms-json", func() { time.Sleep(50 * time.Millisecond); unmarshalSmallJSON() }, true},
	{"sleep1us", func() { time.Sleep(time.Microsecond) }, true},
	{"sleep50us", func() { time.Sleep(50 * time.Microsecond) }, true},
	{"sleep1ms", func() { time.Sleep(time.Millisecond) }, true},
	{"sleep50ms", func() { time.Sleep(50 * time.Millisecond) }, true},
}

// BenchmarkTaskQ reruns antonmashko/taskq's comparison: b.N tasks on a pool of NumCPU workers
// made before the clock starts (the goroutines baseline is TaskQ's goroutine per task), so
// ns/op is the cost of one task. Inline takes part with the task that does not sleep (see
// skipInline).
func BenchmarkTaskQ(b *testing.B) {
	workers := runtime.NumCPU()
	for _, t := range taskqTasks {
		for _, c := range contenders.All {
			if skipInline(c, t.sleeps) {
				continue
			}
			b.Run("workers=NumCPU/task="+t.name+"/pool="+c.Name, func(b *testing.B) {
				runN(b, c, workers, t.task)
			})
		}
	}
}
