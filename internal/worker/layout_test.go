package worker

import (
	"slices"
	"testing"
	"unsafe"
)

// TestEngineFieldsKeepTheirPlaces guards the placement of Engine's fields (see Engine): the
// settings first; mu at the start of the cache line after them, sharing it with the queue;
// on the next line what a plain submit or task end touches; and yielding alone on its line.
// The Engine is large enough to be allocated in a size class of whole lines, so its lines are
// the ones the offsets say.
func TestEngineFieldsKeepTheirPlaces(t *testing.T) {
	var e Engine[func()]
	if off := unsafe.Offsetof(e.cfg); off != 0 {
		t.Errorf("cfg at byte %d, want 0", off)
	}
	mu := unsafe.Offsetof(e.mu)
	if mu%64 != 0 || mu < unsafe.Sizeof(e.cfg) || mu >= unsafe.Sizeof(e.cfg)+64 {
		t.Errorf("mu at byte %d, want the first cache line after the %d bytes of cfg", mu, unsafe.Sizeof(e.cfg))
	}
	// The clock's settings, read by every reading of the clock, most of them without the
	// lock, start the line after the three that every submit and task's end write.
	if off := unsafe.Offsetof(e.clockSet); off != mu+192 {
		t.Errorf("clockSet at byte %d, want %d, the third line after mu's", off, mu+192)
	}
	if end := unsafe.Offsetof(e.queue) + unsafe.Sizeof(e.queue); end > mu+64 {
		t.Errorf("queue ends at byte %d, beyond mu's cache line (%d to %d)", end, mu, mu+64)
	}
	next := map[string]uintptr{
		"running": unsafe.Offsetof(e.running), "pending": unsafe.Offsetof(e.pending),
		"accepted": unsafe.Offsetof(e.accepted), "completed": unsafe.Offsetof(e.completed),
		"workers": unsafe.Offsetof(e.workers), "max": unsafe.Offsetof(e.max),
		"sched": unsafe.Offsetof(e.sched), "gated": unsafe.Offsetof(e.gated),
	}
	for name, off := range next {
		if off < mu+64 || off >= mu+128 {
			t.Errorf("%s at byte %d, want the line after mu's (%d to %d)", name, off, mu+64, mu+128)
		}
	}
	// yielding, written without the lock, shares its cache line with no other field.
	y := unsafe.Offsetof(e.yielding)
	line := y &^ 63
	if before := unsafe.Offsetof(e.bubbled) + unsafe.Sizeof(e.bubbled); before > line {
		t.Errorf("yielding at byte %d shares its cache line (%d to %d) with bubbled (ending at %d)",
			y, line, line+64, before)
	}
	// A size that is one of the allocator's size classes and a multiple of 128 starts every
	// Engine on a pair of cache lines (see the padding at the end of Engine); 576 and 704,
	// also classes, start every other one in the middle of a pair.
	if size := unsafe.Sizeof(e); size%128 != 0 || !slices.Contains([]uintptr{640, 768, 896, 1024, 1152, 1280}, size) {
		t.Errorf("Engine is %d bytes; want a size class that is a multiple of 128 (640, 768, 896, ...): change the padding at its end", size)
	}
}

// TestWorkerFitsOneCacheLine guards the placement of worker's fields (see worker): for a
// Pool's task, an interface, a worker is 64 bytes, a size class whose objects each start a
// cache line, and the times a hand-out writes beside arg are on that line.
func TestWorkerFitsOneCacheLine(t *testing.T) {
	type task interface{ run() }
	var w worker[task]
	if size := unsafe.Sizeof(w); size != 64 {
		t.Errorf("worker is %d bytes, want 64", size)
	}
	if off := unsafe.Offsetof(w.since); off != unsafe.Sizeof(w.arg) {
		t.Errorf("since at byte %d, want %d, just after arg", off, unsafe.Sizeof(w.arg))
	}
	if end := unsafe.Offsetof(w.start) + unsafe.Sizeof(w.start); end > 64 {
		t.Errorf("start ends at byte %d, beyond the worker's line", end)
	}
}
