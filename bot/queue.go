package bot

import "sync"

// keyedQueue runs the functions submitted under one key one at a time, in
// submission order; different keys run concurrently. The zero value is
// ready to use.
type keyedQueue struct {
	mu     sync.Mutex
	queues map[string][]func()
	wg     sync.WaitGroup
}

func (q *keyedQueue) submit(key string, fn func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.queues == nil {
		q.queues = map[string][]func(){}
	}
	list, running := q.queues[key]
	q.queues[key] = append(list, fn)
	if !running {
		q.wg.Go(func() { q.drain(key) })
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
	}
}

// wait blocks until every submitted function has run.
func (q *keyedQueue) wait() { q.wg.Wait() }
