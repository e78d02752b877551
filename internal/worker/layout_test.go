package worker

import (
	"testing"
	"unsafe"
)

// TestEngineFieldsKeepTheirPlaces guards the placement of Engine's fields (see Engine): the
// settings first, mu at the start of the cache line after them, the queue on mu's line, and
// the fields the hot path touches in the order that measured fastest, each at its distance
// from mu; and yielding alone on its line. The Engine is large enough to be allocated in a
// size class of whole lines, so its lines are the ones the offsets say.
func TestEngineFieldsKeepTheirPlaces(t *testing.T) {
	var e Engine[func()]
	if off := unsafe.Offsetof(e.cfg); off != 0 {
		t.Errorf("cfg at byte %d, want 0", off)
	}
	mu := unsafe.Offsetof(e.mu)
	if mu%64 != 0 || mu < unsafe.Sizeof(e.cfg) || mu >= unsafe.Sizeof(e.cfg)+64 {
		t.Errorf("mu at byte %d, want the first cache line after the %d bytes of cfg", mu, unsafe.Sizeof(e.cfg))
	}
	if end := unsafe.Offsetof(e.queue) + unsafe.Sizeof(e.queue); end > mu+64 {
		t.Errorf("queue ends at byte %d, beyond mu's cache line (%d to %d)", end, mu, mu+64)
	}
	// The order after mu, as measured; a new field goes after these.
	order := []struct {
		name string
		off  uintptr
	}{
		{"queue", unsafe.Offsetof(e.queue)}, {"idle", unsafe.Offsetof(e.idle)},
		{"blocked", unsafe.Offsetof(e.blocked)}, {"max", unsafe.Offsetof(e.max)},
		{"running", unsafe.Offsetof(e.running)}, {"held", unsafe.Offsetof(e.held)},
		{"sched", unsafe.Offsetof(e.sched)}, {"gated", unsafe.Offsetof(e.gated)},
		{"workers", unsafe.Offsetof(e.workers)}, {"alive", unsafe.Offsetof(e.alive)},
		{"waking", unsafe.Offsetof(e.waking)}, {"pending", unsafe.Offsetof(e.pending)},
		{"timed", unsafe.Offsetof(e.timed)}, {"stopped", unsafe.Offsetof(e.stopped)},
		{"accepted", unsafe.Offsetof(e.accepted)}, {"completed", unsafe.Offsetof(e.completed)},
	}
	prev := mu
	for _, f := range order {
		if f.off <= prev {
			t.Errorf("%s at byte %d, not after the field before it (byte %d)", f.name, f.off, prev)
		}
		prev = f.off
	}
	// yielding, written without the lock, shares its cache line with no other field.
	y := unsafe.Offsetof(e.yielding)
	line := y &^ 63
	if before := unsafe.Offsetof(e.timing) + unsafe.Sizeof(e.timing); before > line || unsafe.Sizeof(e) > line+64 {
		t.Errorf("yielding at byte %d shares its cache line (%d to %d) with timing (ending at %d) or a later field (Engine is %d bytes)",
			y, line, line+64, before, unsafe.Sizeof(e))
	}
	// Size classes above 512 bytes are whole multiples of 64, so the Engine starts a line.
	if size := unsafe.Sizeof(e); size <= 512 {
		t.Errorf("Engine is %d bytes; at 512 or less its size class may not start a cache line", size)
	}
}
