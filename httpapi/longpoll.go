package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/slackask/slackask/interaction"
)

// Parked long-polls.
//
// A long-poll held by net/http keeps, while it waits, the connection's
// goroutine and the handler's stack, the background-read goroutine, the
// bufio reader and writer, the response buffers, the request and its
// contexts (BenchmarkLongPollMemory measures it). When the AskService is a
// Notifier, a GET, HEAD or POST ?wait= over HTTP/1.x whose ask is still pending
// instead hijacks the connection, leaves a parkedPoll (the connection, the
// ask id, a timer and what the answer needs) and returns, so that net/http
// frees all of that. The answer is written, once, by whichever comes first:
//
//   - the ask ends (Notifier.Notify's callback),
//   - the wait elapses (the timer),
//   - Server.Close (shutdown),
//
// as the same status, headers and JSON body the blocking path writes, plus
// "Connection: close", serialized by (*http.Response).Write; then the
// connection is closed. A caller that goes away first is dropped: one
// sweeper goroutine per Server looks at every parked connection each
// sweepEvery with a read that does not block (connGone). A goroutine per
// connection blocked in a 1-byte Read would notice at once, but its stack
// would cost more than all the rest of a parked poll (new goroutines start
// at the average stack size, which net/http's goroutines push up, and a
// stack never shrinks below it). HTTP/2, a response writer that cannot be
// hijacked and a service without Notifier keep the blocking path
// (Server.wait).

// Notifier is an optional interface of an AskService that calls back when
// an ask ends, without a goroutine blocked per waiter. When the service
// implements it, GET and POST ?wait= over HTTP/1.x park the caller's
// connection instead of blocking a handler in AskService.Wait.
type Notifier interface {
	// Notify arranges for fn to be called once, after the ask id has
	// ended (any final status), typically by the goroutine that ends it,
	// with the ask as it ended: the answer is built from it, without
	// reading the ask again. fn returns quickly (it writes the answer to
	// the caller's connection when the kernel takes it at once, and never
	// waits more than a millisecond for it), does not call into the
	// service and does not modify the ask, so the service may call it
	// with its own locks held and hand every waiter the same ask. Once fn
	// has been called, cancel is not needed. If the
	// ask does not exist or has already ended, Notify may call fn at once
	// or never: the caller calls Get after Notify to find out. cancel
	// forgets fn; it is idempotent and safe from any goroutine but fn's
	// own, and fn may still run once if the ask ended while cancel was
	// running.
	Notify(id string, fn func(ended interaction.Ask)) (cancel func())
}

// parkedWriteTimeout bounds writing the answer to a parked connection.
const parkedWriteTimeout = 10 * time.Second

// inlineWriteTimeout bounds how long the Notify callback may wait for the
// kernel to take the answer before a goroutine takes over the write.
const inlineWriteTimeout = time.Millisecond

// sweepEvery is how often the sweeper looks for parked callers that went
// away (Server.sweepEvery; tests shorten it).
const sweepEvery = 5 * time.Second

// The sweeper looks at sweepChunk parked connections, then pauses for
// sweepPause, so that it never holds a CPU for long.
const (
	sweepChunk = 256
	sweepPause = time.Millisecond
)

// collectAfterParks is how many parked long-polls make the server run a
// garbage collection (in the background, one at a time). Hijacking leaves
// net/http's buffers of the connection behind as garbage, several times
// what the parked poll keeps; after a burst of callers the heap stays grown
// with them until the runtime gets round to it, so the server collects
// itself and hands the freed pages back to the OS at once (debug.FreeOSMemory):
// after runtime.GC alone the background scavenger left them resident, most
// of what a burst of parked callers added to the resident memory. The peak
// while they connect depends on when the runtime collects either way;
// GOMEMLIMIT is the knob for it.
const collectAfterParks = 1000

// closeWorkers is how many parked long-polls Close answers at a time.
const closeWorkers = 16

// parkReason says why a parked long-poll is being finished.
type parkReason uint8

const (
	parkEnded   parkReason = iota // the ask ended
	parkElapsed                   // the wait elapsed
	parkClosed                    // Server.Close
	parkGone                      // the caller closed the connection
)

// parkedPoll is one long-poll whose connection was hijacked. It holds only
// what the answer needs: no request, no response writer, no buffers.
type parkedPoll struct {
	s          *Server
	id         string
	method     string // GET, HEAD or POST: the log, and HEAD has no body
	path       string
	status     int              // of the answer: 200, or 201/200 for POST
	created    *interaction.Ask // POST: the created ask, answered if Get fails
	start      time.Time        // of the request, for the request log
	protoMinor uint8            // HTTP/1.x of the request, echoed in the answer
	cancel     func()           // Notify's
	mu         sync.Mutex       // guards the fields below
	conn       net.Conn         // set once parked, before anything can finish p
	timer      *time.Timer      // the wait; set with conn
	woken      bool             // the ask ended (perhaps before conn was set)
	ended      *interaction.Ask // as Notify handed it over
	done       bool             // finish has begun
}

// parkable reports whether a long-poll of r may be parked rather than
// blocked: the service notifies, the request is HTTP/1.x GET, HEAD or POST,
// and the writer is the recorder of ServeHTTP.
func (s *Server) parkable(w http.ResponseWriter, r *http.Request) (*recorder, bool) {
	if s.notifier == nil || r.ProtoMajor != 1 || (r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost) {
		return nil, false
	}
	rec, ok := w.(*recorder)
	return rec, ok && !rec.wrote
}

// longPoll waits up to d for the ask id to end and returns it as it then
// is, as AskService.Wait does (errors included). When it can, it parks the
// connection instead and returns parked true: the answer is then written
// later, with status, and the handler must return without writing. created
// is the ask that POST /v1/asks just created (nil for GET): a parked POST
// answers it when the final Get fails, as create does.
func (s *Server) longPoll(w http.ResponseWriter, r *http.Request, id string, d time.Duration, status int, created *interaction.Ask) (ask interaction.Ask, parked bool, err error) {
	rec, ok := s.parkable(w, r)
	if !ok {
		ask, err = s.wait(r.Context(), id, d)
		return ask, false, err
	}
	deadline := time.Now().Add(d)
	p := &parkedPoll{
		s: s, id: id, method: r.Method, path: r.URL.Path, status: status, created: created,
		start: rec.start, protoMinor: uint8(r.ProtoMinor),
	}
	// Notify before Get: an end between the two still wakes p.
	p.cancel = s.notifier.Notify(id, p.wake)
	ask, err = s.svc.Get(r.Context(), id)
	if err != nil || ask.Status.Ended() || s.isClosed() {
		p.cancel()
		return ask, false, err
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable after all (a wrapped writer): block instead.
		p.cancel()
		ask, err = s.wait(r.Context(), id, d)
		return ask, false, err
	}
	// Bytes the client pipelined after this request are dropped with the
	// bufio.Reader: the answer closes the connection.
	rec.parked = true

	s.pmu.Lock()
	closed := s.closed
	if !closed {
		s.parked[p] = struct{}{}
		s.pwg.Add(1) // Done by finish
		if !s.sweeping {
			s.sweeping = true
			s.pwg.Add(1) // Done by sweep
			go s.sweep()
		}
		p.mu.Lock()
		p.conn = conn
		p.timer = time.AfterFunc(time.Until(deadline), p.elapsed)
		woken := p.woken
		p.mu.Unlock()
		if woken {
			go p.finish(context.Background(), parkEnded)
		}
		s.collectAfterBurst()
	}
	s.pmu.Unlock()
	if closed {
		// Close ran after the check above: answer now, as Close would have.
		p.cancel()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), parkedWriteTimeout)
		defer cancel()
		p.answer(ctx, conn, parkClosed)
	}
	return ask, true, nil
}

// collectAfterBurst counts a park and, every s.gcEvery of them, starts a
// garbage collection unless one runs (see collectAfterParks). s.pmu held.
func (s *Server) collectAfterBurst() {
	if s.parks.Add(1) < s.gcEvery || !s.collecting.CompareAndSwap(false, true) {
		return
	}
	s.parks.Store(0)
	s.pwg.Add(1)
	go func() {
		defer s.pwg.Done()
		debug.FreeOSMemory() // a collection, then the free pages go back to the OS
		s.collecting.Store(false)
	}()
}

// wake is the Notify callback. When p is parked it answers at once, in
// the caller's goroutine: the answer is a few KB and a parked connection
// has sent nothing yet, so the write completes in the kernel's buffer
// without waiting, while handing it to a new goroutine would wait for a
// sleeping thread to wake. A write the
// kernel cannot take within inlineWriteTimeout (a full buffer) is finished
// by a goroutine. wake must not call p.cancel: the service calls it with
// its own locks held, and a called fn needs no cancel.
func (p *parkedPoll) wake(ended interaction.Ask) {
	p.mu.Lock()
	ready := p.conn != nil && !p.done
	p.woken, p.ended = true, &ended
	if ready {
		p.done = true
	}
	conn, timer := p.conn, p.timer
	p.mu.Unlock()
	if !ready {
		return
	}
	timer.Stop()
	w := p.render(context.Background(), parkEnded) // from ended: no call into the service
	out, err := w.serialize(p.protoMinor, p.method == http.MethodHead)
	if err != nil {
		p.closeAnswered(conn, err, w.status)
		p.s.unpark(p)
		return
	}
	_ = conn.SetWriteDeadline(time.Now().Add(inlineWriteTimeout))
	n, err := conn.Write(out)
	if errors.Is(err, os.ErrDeadlineExceeded) && n < len(out) {
		go func() {
			defer p.s.unpark(p)
			_ = conn.SetWriteDeadline(time.Now().Add(parkedWriteTimeout))
			_, err := conn.Write(out[n:])
			p.closeAnswered(conn, err, w.status)
		}()
		return
	}
	p.closeAnswered(conn, err, w.status)
	p.s.unpark(p)
}

// elapsed is the timer callback.
func (p *parkedPoll) elapsed() { p.finish(context.Background(), parkElapsed) }

// sweep finishes, every s.sweepEvery, the parked polls whose caller went
// away. It returns when no poll is parked (the next park starts it again)
// or when Close is called.
func (s *Server) sweep() {
	defer s.pwg.Done()
	t := time.NewTicker(s.sweepEvery)
	defer t.Stop()
	var (
		polls []*parkedPoll
		buf   [512]byte
	)
	for {
		select {
		case <-t.C:
		case <-s.sweepStop:
			return
		}
		s.pmu.Lock()
		if len(s.parked) == 0 {
			s.sweeping = false
			s.pmu.Unlock()
			return
		}
		for p := range s.parked {
			polls = append(polls, p)
		}
		s.pmu.Unlock()
		for i, p := range polls {
			if connGone(p.conn, buf[:]) {
				p.finish(context.Background(), parkGone)
			}
			// A look costs a system call: many in a row hold a CPU, and
			// answers queue behind them. Pause between chunks.
			if i%sweepChunk == sweepChunk-1 {
				select {
				case <-time.After(sweepPause):
				case <-s.sweepStop:
					return
				}
			}
		}
		clear(polls)
		polls = polls[:0]
	}
}

// finish answers (or, when the caller is gone, just closes) the parked
// connection once and forgets p; later calls return at once.
func (p *parkedPoll) finish(ctx context.Context, why parkReason) {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	p.done = true
	conn, timer := p.conn, p.timer
	p.mu.Unlock()
	defer p.s.unpark(p)
	timer.Stop()
	p.cancel()
	if why == parkGone {
		_ = conn.Close()
		p.s.logRequest(p.method, p.path, p.status, p.start)
		return
	}
	p.answer(ctx, conn, why)
}

// answer writes the answer to conn in one write, as the blocking path
// would have, then closes conn and logs the request.
func (p *parkedPoll) answer(ctx context.Context, conn net.Conn, why parkReason) {
	w := p.render(ctx, why)
	out, err := w.serialize(p.protoMinor, p.method == http.MethodHead)
	if err == nil {
		dl := time.Now().Add(parkedWriteTimeout)
		if d, ok := ctx.Deadline(); ok && d.Before(dl) {
			dl = d
		}
		_ = conn.SetWriteDeadline(dl)
		_, err = conn.Write(out)
	}
	p.closeAnswered(conn, err, w.status)
}

// closeAnswered closes conn after the answer (with a FIN first when it was
// written whole, err nil) and logs the request.
func (p *parkedPoll) closeAnswered(conn net.Conn, err error, status int) {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok && err == nil {
		_ = cw.CloseWrite() // FIN after the answer
	}
	_ = conn.Close()
	p.s.logRequest(p.method, p.path, status, p.start)
}

// render builds the answer: the ask as it ended when Notify handed it
// over, else the ask as it now is (a Get), or when that Get fails what get
// (the coded error) and create (the created ask) answer after a failed
// wait. A panic of the
// service is logged and answered 500, as ServeHTTP's recover does.
func (p *parkedPoll) render(ctx context.Context, why parkReason) (w *parkedResponse) {
	w = newParkedResponse()
	defer func() {
		if v := recover(); v != nil {
			p.s.opts.Logger.Error().Str("method", p.method).Str("path", p.path).
				Str("panic", fmt.Sprint(v)).Msg("http handler panicked")
			w = newParkedResponse()
			writeError(w, http.StatusInternalServerError, interaction.Internal, "internal error")
		}
	}()
	p.mu.Lock()
	ended := p.ended
	p.mu.Unlock()
	if why == parkEnded && ended != nil {
		writeJSON(w, p.status, *ended)
		return w
	}
	ask, err := p.s.svc.Get(ctx, p.id)
	switch {
	case err == nil:
		writeJSON(w, p.status, ask)
	case p.created != nil: // POST /v1/asks: the ask exists, answer with it
		if why != parkClosed || ctx.Err() == nil {
			p.s.opts.Logger.Warn().Err(err).Str("ask", p.id).Msg("wait after create failed")
		}
		writeJSON(w, p.status, *p.created)
	default:
		p.s.failAt(w, p.method, p.path, err)
	}
	return w
}

// unpark forgets p once it is finished.
func (s *Server) unpark(p *parkedPoll) {
	s.pmu.Lock()
	delete(s.parked, p)
	s.pmu.Unlock()
	s.pwg.Done()
}

func (s *Server) isClosed() bool {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	return s.closed
}

// parkedCount returns how many long-polls are parked.
func (s *Server) parkedCount() int {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	return len(s.parked)
}

// Shutdown stops srv, the http.Server that serves s, together with s's
// long-polls: srv stops accepting connections and waits for its active
// requests (http.Server.Shutdown), while Close answers the parked
// long-polls, which srv does not see, and ends the blocked ones, which srv
// waits for. It returns when both are done, or when ctx ends: then with
// their errors joined (wrapping ctx's error).
func (s *Server) Shutdown(ctx context.Context, srv *http.Server) error {
	closed := make(chan error, 1)
	// Shutdown runs its hooks once the listeners are closed: a caller that
	// Close answers cannot come back and be answered again and again.
	srv.RegisterOnShutdown(func() { closed <- s.Close(ctx) })
	err := srv.Shutdown(ctx)
	if err != nil {
		err = fmt.Errorf("httpapi shutdown: %w", err)
	}
	return errors.Join(err, <-closed)
}

// Close ends the API's long-polls for a shutdown: each parked one is
// answered now with its ask as it stands (as when its wait elapses), each
// one blocked in AskService.Wait returns and answers the same way, and
// later ones answer at once without waiting. Other requests are served as
// before. Shutdown calls it at the right moment, after the listeners are
// closed (a caller told "still pending" comes back at once); whoever runs
// the http.Server otherwise must call it, since http.Server.Shutdown
// neither sees nor waits for parked (hijacked) connections.
//
// Close returns when every parked connection has been answered and closed.
// If ctx ends first, the connections not yet answered are closed without an
// answer and Close returns ctx's error, wrapped. Calling it again is
// harmless.
func (s *Server) Close(ctx context.Context) error {
	s.pmu.Lock()
	if !s.closed {
		s.closed = true
		s.stopWaits()
		close(s.sweepStop)
	}
	polls := make([]*parkedPoll, 0, len(s.parked))
	for p := range s.parked {
		polls = append(polls, p)
	}
	s.pmu.Unlock()

	work := make(chan *parkedPoll)
	var workers sync.WaitGroup
	for range min(closeWorkers, len(polls)) {
		workers.Go(func() {
			for p := range work {
				p.finish(ctx, parkClosed)
			}
		})
	}
	go func() {
		defer close(work)
		for _, p := range polls {
			select {
			case work <- p:
			case <-ctx.Done():
				return
			}
		}
	}()
	done := make(chan struct{})
	go func() {
		workers.Wait()
		s.pwg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	for _, p := range polls {
		p.abort()
	}
	<-done
	return fmt.Errorf("httpapi close: %w", ctx.Err())
}

// abort closes p's connection without an answer, unless p is finished.
func (p *parkedPoll) abort() {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done {
		// finish owns the connection; closing it unblocks a stuck write.
		_ = p.conn.Close()
		return
	}
	p.finish(context.Background(), parkGone)
}

// parkedResponse is an http.ResponseWriter that keeps one small response in
// memory, so that the parked answer comes from the same code (writeJSON,
// failAt) as the blocking one.
type parkedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newParkedResponse() *parkedResponse { return &parkedResponse{header: http.Header{}} }

func (r *parkedResponse) Header() http.Header { return r.header }

func (r *parkedResponse) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *parkedResponse) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// serialize returns the response as net/http writes it, with a Date and
// Content-Length as net/http's server sets them and "Connection: close",
// for one write; for a HEAD request (head) without the body, as net/http
// answers HEAD. Errors are wrapped.
func (r *parkedResponse) serialize(protoMinor uint8, head bool) ([]byte, error) {
	r.WriteHeader(http.StatusOK)
	if r.header.Get("Date") == "" {
		r.header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	resp := &http.Response{
		StatusCode:    r.status,
		ProtoMajor:    1,
		ProtoMinor:    int(protoMinor),
		Header:        r.header,
		Body:          io.NopCloser(&r.body),
		ContentLength: int64(r.body.Len()),
		Close:         true,
	}
	if head {
		resp.Request = &http.Request{Method: http.MethodHead}
	}
	var out bytes.Buffer
	if err := resp.Write(&out); err != nil {
		return nil, fmt.Errorf("parked response: %w", err)
	}
	return out.Bytes(), nil
}
