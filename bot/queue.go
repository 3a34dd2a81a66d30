package bot

import (
	"sync"
	"time"
)

// keyedQueue runs the functions submitted under one key one at a time, in
// submission order; different keys run concurrently. The zero value is
// ready to use.
//
// A worker that has drained its key waits up to workerIdle for another
// key before it exits, so that a steady stream of clicks reuses a few
// goroutines instead of starting one per click: each new goroutine grows
// its stack again, by copying, to the depth of a store write.
type keyedQueue struct {
	mu     sync.Mutex
	queues map[string][]func() // a key is present while a worker owns it
	// idle takes a key to a worker waiting for one (unbuffered: a send
	// succeeds only when a worker is waiting).
	idle chan string
	// quit, closed by wait, lets the idle workers go; a worker started
	// after that gets a new one.
	quit    chan struct{}
	jobs    sync.WaitGroup // submitted functions not yet run
	workers sync.WaitGroup
}

const workerIdle = 2 * time.Second

func (q *keyedQueue) submit(key string, fn func()) {
	q.jobs.Add(1)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.queues == nil {
		q.queues = map[string][]func(){}
		q.idle = make(chan string)
	}
	list, owned := q.queues[key]
	q.queues[key] = append(list, fn)
	if owned {
		return
	}
	select {
	case q.idle <- key:
	default:
		if q.quit == nil {
			q.quit = make(chan struct{})
		}
		quit := q.quit
		q.workers.Go(func() { q.work(key, quit) })
	}
}

// work drains key, then waits for the next key handed to it until it has
// been idle for workerIdle or quit is closed.
func (q *keyedQueue) work(key string, quit <-chan struct{}) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		q.drain(key)
		idle.Reset(workerIdle)
		select {
		case key = <-q.idle:
		case <-idle.C:
			return
		case <-quit:
			return
		}
	}
}

func (q *keyedQueue) drain(key string) {
	for {
		q.mu.Lock()
		list := q.queues[key]
		if len(list) == 0 {
			delete(q.queues, key)
			q.mu.Unlock()
			return
		}
		fn := list[0]
		q.queues[key] = list[1:]
		q.mu.Unlock()
		fn()
		q.jobs.Done()
	}
}

// wait blocks until every submitted function has run and the idle workers
// have exited. Functions may still be submitted after it.
func (q *keyedQueue) wait() {
	q.jobs.Wait()
	q.mu.Lock()
	if q.quit != nil {
		close(q.quit)
		q.quit = nil
	}
	q.mu.Unlock()
	q.workers.Wait()
}
