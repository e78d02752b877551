// Package spare keeps values for reuse across all the pools of a program: one sync.Pool per
// type. A pool's queue gives its drained segments to it and a pool's engine its exited
// workers' spots, so a pool made after another one stopped starts on what that one left
// instead of allocating it again.
//
// What a sync.Pool holds goes back to the garbage collector within two collections once
// nobody asks for it, so spares never pile up.
package spare

import (
	"reflect"
	"sync"
)

// Pool holds spare values of type V. All its methods are safe for concurrent use.
type Pool[V any] struct {
	p sync.Pool
}

// pools maps each type V to its *Pool[V].
var pools sync.Map // reflect.Type → *Pool[V]

// For returns the Pool of spare values of type V: the same one on every call with the same V.
// It costs a map lookup, so callers look it up once and keep it.
func For[V any]() *Pool[V] {
	t := reflect.TypeFor[V]()
	p, ok := pools.Load(t)
	if !ok {
		p, _ = pools.LoadOrStore(t, new(Pool[V]))
	}
	return p.(*Pool[V])
}

// Get takes a spare value; ok is false when there is none.
func (p *Pool[V]) Get() (v V, ok bool) {
	v, ok = p.p.Get().(V)
	return v, ok
}

// Put gives v for reuse. v must be ready for its next user, and no one else may hold it.
func (p *Pool[V]) Put(v V) {
	p.p.Put(v)
}
