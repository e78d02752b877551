package worker

import "time"

// bubbleClockEnd bounds the fake clock of a testing/synctest bubble, which starts at midnight
// UTC on 2000-01-01 and moves only as far as the bubble's goroutines sleep.
var bubbleClockEnd = time.Date(2010, time.January, 1, 0, 0, 0, 0, time.UTC)

// inBubble reports whether the calling goroutine may be inside a testing/synctest bubble.
//
// Worker spots and blocked-submitter records hold channels and are reused across the engines
// of a process. A channel made inside a bubble and used from outside it, or from another
// bubble, ends the process ("receive on synctest channel from outside bubble"), and one made
// outside and waited on inside keeps the bubble's clock from advancing. So nothing made inside
// a bubble is given for reuse, and nothing is taken for reuse inside one.
//
// The Go runtime does not say whether a goroutine is in a bubble, but a bubble's clock does:
// it reads 2000-01-01 plus what the bubble has slept. A clock before 2010 is taken for a
// bubble's. Where the real clock reads so early (a device without a clock source), the only
// cost is that spots are not reused. An engine made inside a bubble remembers it and reuses
// nothing for the rest of its life, however long the bubble then sleeps; only a pool made
// after its bubble slept ten years of fake time would be taken for one of the real world.
// TestPoolsInSeveralBubbles (in the root package) guards it.
func inBubble() bool {
	return time.Now().Before(bubbleClockEnd)
}
