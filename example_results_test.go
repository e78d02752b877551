package crew_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"

	"github.com/crewgo/crew"
)

func ExampleGo() {
	pool := crew.New(2)
	defer pool.StopAndWait()
	f := crew.Go(pool, func() (int, error) { return 6 * 7, nil })
	v, err := f.Wait()
	fmt.Println(v, err)
	// Output: 42 <nil>
}

func ExampleFuture_Done() {
	pool := crew.New(1)
	defer pool.StopAndWait()
	f := crew.Go(pool, func() (string, error) { return "ready", nil })
	<-f.Done() // usable in a select with other channels
	v, _ := f.Wait()
	fmt.Println(v)
	// Output: ready
}

// fetch stands in for a network call that honors its context.
func fetch(ctx context.Context, url string) (string, error) {
	if strings.HasSuffix(url, "/down") {
		return "", fmt.Errorf("GET %s: 503", url)
	}
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	default:
		return "ok:" + url, nil
	}
}

func ExamplePool_Group() {
	pool := crew.New(4)
	defer pool.StopAndWait()

	// Fan out calls; the first failure cancels the others' context.
	g, ctx := pool.Group(context.Background())
	for _, url := range []string{"https://a.example/up", "https://b.example/down", "https://c.example/up"} {
		g.Go(func(context.Context) error {
			_, err := fetch(ctx, url)
			return err
		})
	}
	fmt.Println(g.Wait())
	// Output: GET https://b.example/down: 503
}

func ExampleNewResults() {
	pool := crew.New(4)
	defer pool.StopAndWait()
	r, ctx := crew.NewResults[string](context.Background(), pool)
	for _, url := range []string{"https://a.example/1", "https://b.example/2", "https://c.example/3"} {
		r.Go(func(context.Context) (string, error) { return fetch(ctx, url) })
	}
	pages, err := r.Wait() // in submission order
	fmt.Println(pages, err)
	// Output: [ok:https://a.example/1 ok:https://b.example/2 ok:https://c.example/3] <nil>
}

func ExampleMap() {
	pool := crew.New(4)
	defer pool.StopAndWait()
	squares, err := crew.Map(context.Background(), pool, []int{1, 2, 3, 4}, func(_ context.Context, v int) (int, error) {
		return v * v, nil
	})
	fmt.Println(squares, err)
	// Output: [1 4 9 16] <nil>
}

func ExampleForEach() {
	pool := crew.New(4)
	defer pool.StopAndWait()

	// A million generated values, pulled only as fast as the 4 workers take them.
	numbers := func(yield func(int) bool) {
		for i := 1; i <= 1_000_000; i++ {
			if !yield(i) {
				return
			}
		}
	}
	var sum atomic.Int64
	err := crew.ForEach(context.Background(), pool, iter.Seq[int](numbers), func(_ context.Context, v int) error {
		sum.Add(int64(v))
		return nil
	})
	fmt.Println(sum.Load(), err)
	// Output: 500000500000 <nil>
}

func ExampleForEach_firstError() {
	pool := crew.New(2)
	defer pool.StopAndWait()
	lines := []string{"10", "20", "x", "40"}
	values := func(yield func(string) bool) {
		for _, l := range lines {
			if !yield(l) {
				return
			}
		}
	}
	err := crew.ForEach(context.Background(), pool, values, func(_ context.Context, line string) error {
		if line == "x" {
			return errors.New("bad line: x")
		}
		return nil
	})
	fmt.Println(err)
	// Output: bad line: x
}
