package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// progress tells the person waiting for a run how far it has got. On a terminal it keeps one
// line up to date (pass, suite, contender, the scenario running, the time left); elsewhere (a
// log, a pipe) it writes one line each time a pass finishes a suite.
type progress struct {
	w     io.Writer
	tty   bool
	width int // the most columns the terminal line takes
	now   func() time.Time

	mu       sync.Mutex
	start    time.Time
	jobs     []job // every job of the run, in the order they run
	next     int   // the index in jobs of the running job, or of the next to run
	passes   int
	jobStart time.Time
	running  bool                       // jobs[next] has started
	scenario string                     // the running job's current scenario, as the tables name it
	took     map[string][]time.Duration // by jobKey: the time each finished run of that job took
	stop     chan struct{}              // closes the ticker of a terminal line
	stopped  chan struct{}
}

// newProgress returns the progress of a run of jobs, in that order, over passes passes.
func newProgress(w io.Writer, tty bool, jobs []job, passes int) *progress {
	return &progress{w: w, tty: tty, width: 100, now: time.Now, jobs: jobs, passes: passes,
		took: map[string][]time.Duration{}}
}

// isTerminal reports whether f is a terminal that understands a carriage return: a
// character device, and TERM is not "dumb".
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

func jobKey(j job) string { return j.suite.name + "/" + j.contender }

// begin starts the clock; on a terminal it also redraws the line every second, until end.
func (p *progress) begin() {
	p.mu.Lock()
	p.start, p.jobStart = p.now(), p.now()
	p.mu.Unlock()
	if !p.tty {
		return
	}
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.draw()
				p.mu.Unlock()
			}
		}
	}()
}

// startJob says that the job at index i of the run begins.
func (p *progress) startJob(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next, p.jobStart, p.scenario, p.running = i, p.now(), "", true
	if p.tty {
		p.draw()
	}
}

// endJob says that the running job has finished.
func (p *progress) endJob() {
	p.mu.Lock()
	defer p.mu.Unlock()
	j := p.jobs[p.next]
	p.took[jobKey(j)] = append(p.took[jobKey(j)], p.now().Sub(p.jobStart))
	p.next++
	p.running, p.scenario = false, ""
	if p.tty {
		p.draw()
		return
	}
	if p.next == len(p.jobs) || p.jobs[p.next].suite.name != j.suite.name || p.pass(p.next) != p.pass(p.next-1) {
		fmt.Fprintf(p.w, "crewbench: pass %d/%d, %s done; %s\n", p.pass(p.next-1)+1, p.passes, j.suite.name, p.times())
	}
}

// end clears the terminal line and stops its ticker.
func (p *progress) end() {
	if p.stop != nil {
		close(p.stop)
		<-p.stopped
		p.stop = nil
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// pass is the pass of the job at index i.
func (p *progress) pass(i int) int { return i * p.passes / max(len(p.jobs), 1) }

// sawScenario records the scenario the running job has reached.
func (p *progress) sawScenario(name string) {
	p.mu.Lock()
	p.scenario = name
	p.mu.Unlock()
}

// times is "12s elapsed, about 1m30s left", or without the guess before the first job ends.
func (p *progress) times() string {
	s := fmt.Sprintf("%s elapsed", p.now().Sub(p.start).Round(time.Second))
	if left, ok := p.left(); ok {
		s += fmt.Sprintf(", about %s left", left.Round(time.Second))
	}
	return s
}

// left guesses the time the run still takes: each job still to run takes what the same job
// took before (an earlier pass), or else the mean of its suite's jobs so far, or else its
// suite's quickJob scaled by how the run's jobs so far compared with theirs. The running
// job's time so far counts as done. ok is false until a job has finished.
func (p *progress) left() (time.Duration, bool) {
	if p.next == 0 {
		return 0, false
	}
	suiteSum, suiteN := map[string]time.Duration{}, map[string]int{}
	var took, guessed time.Duration
	for _, j := range p.jobs[:len(p.jobs)/max(p.passes, 1)] { // one pass: each job once
		if ds := p.took[jobKey(j)]; len(ds) > 0 {
			suiteSum[j.suite.name] += mean(ds)
			suiteN[j.suite.name]++
			took += mean(ds)
			guessed += j.suite.quickJob
		}
	}
	scale := 1.0
	if guessed > 0 && took > 0 {
		scale = float64(took) / float64(guessed)
	}
	var left time.Duration
	for _, j := range p.jobs[p.next:] {
		switch {
		case len(p.took[jobKey(j)]) > 0:
			left += mean(p.took[jobKey(j)])
		case suiteN[j.suite.name] > 0:
			left += suiteSum[j.suite.name] / time.Duration(suiteN[j.suite.name])
		default:
			left += time.Duration(float64(j.suite.quickJob) * scale)
		}
	}
	if p.running {
		left -= min(p.now().Sub(p.jobStart), left)
	}
	return left, true
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// draw rewrites the terminal line; p.mu is held.
func (p *progress) draw() {
	if p.next >= len(p.jobs) {
		return
	}
	j := p.jobs[p.next]
	line := fmt.Sprintf("crewbench: pass %d/%d  %s %s  %s  [run %d/%d, %s]", p.pass(p.next)+1, p.passes,
		j.suite.name, p.scenario, j.contender, p.next+1, len(p.jobs), p.times())
	if utf8.RuneCountInString(line) > p.width-1 {
		line = string([]rune(line)[:p.width-2]) + "…"
	}
	fmt.Fprintf(p.w, "\r\033[K%s", line)
}

// scenarioWatcher passes a benchmark's output through to out and tells p the scenario of
// each benchmark line as it starts: go test prints a benchmark's name before running it.
type scenarioWatcher struct {
	out     io.Writer
	p       *progress
	partial []byte // the current line so far
}

func (s *scenarioWatcher) Write(b []byte) (int, error) {
	n, err := s.out.Write(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.partial = append(s.partial, b...)
			break
		}
		s.partial = s.partial[:0]
		b = b[i+1:]
	}
	if name, ok := benchScenario(string(s.partial)); ok {
		s.p.sawScenario(name)
	}
	return n, err
}

// benchScenario is the scenario of a line that starts with a benchmark's name, as the tables
// name it: "BenchmarkPond/load=1u-100Kt/task=randfloat/pool=crew-2" is 1u-100Kt/randfloat.
func benchScenario(line string) (string, bool) {
	if !strings.HasPrefix(line, "Benchmark") {
		return "", false
	}
	name, _, _ := strings.Cut(line, "\t")
	parts := strings.Split(strings.TrimSpace(name), "/")
	if len(parts) < 3 {
		return "", false
	}
	var out []string
	for _, part := range parts[1 : len(parts)-1] {
		if k, v, ok := strings.Cut(part, "="); ok && k != "par" {
			part = v
		}
		out = append(out, part)
	}
	return strings.Join(out, "/"), true
}
