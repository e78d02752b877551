package spare

import (
	"runtime"
	"testing"

	"github.com/crewgo/crew/internal/racetest"
)

type a struct{ _ int }
type b struct{ _ int }

// TestForGivesOnePoolPerType: every call with one type returns the same Pool, and types of
// the same shape get different ones.
func TestForGivesOnePoolPerType(t *testing.T) {
	first, second := For[*a](), For[*a]()
	if first != second {
		t.Fatal("two calls of For[*a] returned different pools")
	}
	if any(For[*a]()) == any(For[*b]()) {
		t.Fatal("For[*a] and For[*b] returned the same pool")
	}
}

// TestGetReturnsWhatWasPut: a value put in is what a later Get returns, and a Get from an
// empty pool says so.
func TestGetReturnsWhatWasPut(t *testing.T) {
	type c struct{ n int } // a type no other test puts in
	p := For[*c]()
	if v, ok := p.Get(); ok {
		t.Fatalf("Get from an empty pool = %v, true", v)
	}
	racetest.SkipPoolReuse(t)
	want := &c{7}
	p.Put(want)
	if got, ok := p.Get(); !ok || got != want {
		t.Fatalf("Get = %p, %v; want %p, true", got, ok, want)
	}
}

// TestSparesGoBackToTheCollector: values nobody asks for are gone after two collections.
func TestSparesGoBackToTheCollector(t *testing.T) {
	type d struct{ n int }
	p := For[*d]()
	p.Put(&d{1})
	runtime.GC()
	runtime.GC()
	if v, ok := p.Get(); ok {
		t.Fatalf("Get after two collections = %v, true", v)
	}
}
