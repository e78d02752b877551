package crew_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/crewgo/crew"
)

func ExampleMapSeq() {
	pool := crew.New(4)
	defer pool.StopAndWait()

	// Parse lines on the pool, results in the order of the lines; the first failure ends the
	// sequence after the results before it.
	lines := slices.Values([]string{"3", "14", "15", "x", "92"})
	for n, err := range crew.MapSeq(context.Background(), pool, lines, func(_ context.Context, line string) (int, error) {
		return strconv.Atoi(line)
	}) {
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		fmt.Println(n)
	}
	// Output:
	// 3
	// 14
	// 15
	// error: strconv.Atoi: parsing "x": invalid syntax
}

func ExampleMapSeqUnordered() {
	pool := crew.New(4)
	defer pool.StopAndWait()

	// Results as the calls finish: a slow call does not hold back the ones after it.
	urls := slices.Values([]string{"https://a.example/1", "https://b.example/2", "https://c.example/3"})
	var pages []string
	for page, err := range crew.MapSeqUnordered(context.Background(), pool, urls, fetch) {
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		pages = append(pages, page)
	}
	slices.Sort(pages) // the order of completion varies from run to run
	fmt.Println(pages)
	// Output: [ok:https://a.example/1 ok:https://b.example/2 ok:https://c.example/3]
}

func ExampleCompleted() {
	pool := crew.New(3)
	defer pool.StopAndWait()
	fast := crew.Go(pool, func() (string, error) { return "fast", nil })
	slow := crew.Go(pool, func() (string, error) { fast.Wait(); return "slow", nil })
	slowest := crew.Go(pool, func() (string, error) { slow.Wait(); return "slowest", nil })

	for f := range crew.Completed(slowest, slow, fast) {
		v, _ := f.Wait() // returns without waiting: f has completed
		fmt.Println(v)
	}
	// Output:
	// fast
	// slow
	// slowest
}

func ExamplePool_GroupAll() {
	pool := crew.New(4)
	defer pool.StopAndWait()

	// Every call runs, whatever the others return; Wait joins every error, in the order of
	// the Go calls.
	g, _ := pool.GroupAll(context.Background())
	for _, url := range []string{"https://a.example/down", "https://b.example/up", "https://c.example/down"} {
		g.Go(func(ctx context.Context) error {
			_, err := fetch(ctx, url)
			return err
		})
	}
	fmt.Println(g.Wait())
	// Output:
	// GET https://a.example/down: 503
	// GET https://c.example/down: 503
}

func ExampleGroup_TryGo() {
	// One worker and room for one waiting task: a task that waited in Go for room on its own
	// pool would wait forever.
	pool := crew.New(1, crew.WithQueueSize(1))
	defer pool.StopAndWait()
	g, _ := pool.Group(context.Background())
	var parts atomic.Int32
	part := func(context.Context) error {
		parts.Add(1)
		return nil
	}
	g.Go(func(ctx context.Context) error {
		for range 5 {
			if !g.TryGo(part) {
				part(ctx) // refused: do it here
			}
		}
		return nil
	})
	fmt.Println(g.Wait(), parts.Load())
	// Output: <nil> 5
}

func ExampleBatch() {
	pool := crew.New(4)
	defer pool.StopAndWait()

	// A million tiny values, handed to the workers a thousand at a time.
	values := func(yield func(int) bool) {
		for v := range 1_000_000 {
			if !yield(v) {
				return
			}
		}
	}
	var sum atomic.Int64
	err := crew.ForEach(context.Background(), pool, crew.Batch(values, 1000), func(_ context.Context, batch []int) error {
		s := 0
		for _, v := range batch {
			s += v
		}
		sum.Add(int64(s))
		return nil
	})
	fmt.Println(sum.Load(), err)
	// Output: 499999500000 <nil>
}
