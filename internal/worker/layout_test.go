package worker

import (
	"testing"
	"unsafe"
)

// TestHotFieldsFillThreeCacheLines guards the order of Engine's fields (see Engine): what
// Submit and a worker's next touch while no feature is in use lies in the first three cache
// lines, and the Engine is large enough to be allocated in a size class of whole lines.
func TestHotFieldsFillThreeCacheLines(t *testing.T) {
	var e Engine[func()]
	hot := map[string]uintptr{
		"mu": unsafe.Offsetof(e.mu), "running": unsafe.Offsetof(e.running),
		"pending": unsafe.Offsetof(e.pending), "waking": unsafe.Offsetof(e.waking),
		"workers": unsafe.Offsetof(e.workers), "max": unsafe.Offsetof(e.max),
		"sched": unsafe.Offsetof(e.sched), "gated": unsafe.Offsetof(e.gated),
		"queue":   unsafe.Offsetof(e.queue) + unsafe.Sizeof(e.queue) - 1,
		"stopped": unsafe.Offsetof(e.stopped), "idle": unsafe.Offsetof(e.idle),
		"blocked":  unsafe.Offsetof(e.blocked) + unsafe.Sizeof(e.blocked) - 1,
		"accepted": unsafe.Offsetof(e.accepted), "completed": unsafe.Offsetof(e.completed),
	}
	for name, off := range hot {
		if off >= 3*64 {
			t.Errorf("field %s ends at byte %d of Engine, beyond its first three cache lines", name, off)
		}
	}
	// Size classes above 512 bytes are whole multiples of 64, so the Engine starts a line.
	if size := unsafe.Sizeof(e); size <= 512 {
		t.Errorf("Engine is %d bytes; at 512 or less its size class may not start a cache line", size)
	}
}
