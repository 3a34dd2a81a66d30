package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// EventLog is an optional interface of an AskService that keeps the audit
// trail of its asks (asks.Service does). Without it GET
// /v1/asks/{id}/events and GET /v1/events answer 404 NOT_FOUND.
type EventLog interface {
	// Events returns every event of ask id, in order; NOT_FOUND for an
	// unknown ask.
	Events(ctx context.Context, id string) ([]store.Event, error)
	// Feed returns the events of every ask with seq > after, in order, at
	// most limit of them.
	Feed(ctx context.Context, after int64, limit int) ([]store.Event, error)
}

// FeedWaiter is an optional interface of an EventLog (asks.Service has
// it): with it, ?wait= on GET /v1/events long-polls.
type FeedWaiter interface {
	// WaitFeed is Feed that, when nothing comes after after, waits up to
	// wait for an event; none when wait passes or ctx ends first.
	WaitFeed(ctx context.Context, after int64, limit int, wait time.Duration) ([]store.Event, error)
}

// eventsResponse is the body of GET /v1/asks/{id}/events.
type eventsResponse struct {
	Events []store.Event `json:"events"`
}

// feedResponse is the body of GET /v1/events: next is the after of the
// following page (the last seq served, else the after asked for).
type feedResponse struct {
	Events []store.Event `json:"events"`
	Next   int64         `json:"next"`
}

// eventLog returns the service's EventLog, or answers 404 without one.
func (s *Server) eventLog(w http.ResponseWriter, r *http.Request) (EventLog, bool) {
	el, ok := s.svc.(EventLog)
	if !ok {
		s.fail(w, r, interaction.Errorf(interaction.NotFound, "this service keeps no audit trail"))
	}
	return el, ok
}

// askEvents serves GET /v1/asks/{id}/events.
func (s *Server) askEvents(w http.ResponseWriter, r *http.Request) {
	el, ok := s.eventLog(w, r)
	if !ok {
		return
	}
	evs, err := el.Events(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if evs == nil {
		evs = []store.Event{}
	}
	writeJSON(w, http.StatusOK, eventsResponse{Events: evs})
}

// feed serves GET /v1/events?after=SEQ&limit=N&wait=DURATION.
func (s *Server) feed(w http.ResponseWriter, r *http.Request) {
	after, limit, err := feedParams(r)
	var wait time.Duration
	if err == nil {
		wait, err = s.waitParam(r)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	el, ok := s.eventLog(w, r)
	if !ok {
		return
	}
	var evs []store.Event
	if fw, ok := el.(FeedWaiter); ok && wait > 0 {
		evs, err = s.waitFeed(r.Context(), fw, after, limit, wait)
	} else {
		evs, err = el.Feed(r.Context(), after, limit)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if evs == nil {
		evs = []store.Event{}
	}
	next := after
	if len(evs) > 0 {
		next = evs[len(evs)-1].Seq
	}
	writeJSON(w, http.StatusOK, feedResponse{Events: evs, Next: next})
}

// waitFeed long-polls the feed for at most d, as wait does an ask: the
// connection counts as waiting for LimitActive (which may answer at once
// instead), and Close ends the wait.
func (s *Server) waitFeed(ctx context.Context, fw FeedWaiter, after int64, limit int, d time.Duration) ([]store.Event, error) {
	release, ok := holdWait(ctx)
	if !ok {
		return fw.WaitFeed(ctx, after, limit, 0)
	}
	defer release()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.closing, cancel)
	defer stop()
	return fw.WaitFeed(ctx, after, limit, d)
}

// feedParams reads ?after= (a seq, 0 or more; absent: 0, the start) and
// ?limit= (1 to store.FeedMax; absent: store.FeedDefault).
func feedParams(r *http.Request) (after int64, limit int, err error) {
	q := r.URL.Query()
	if v := q.Get("after"); v != "" {
		after, err = strconv.ParseInt(v, 10, 64)
		if err != nil || after < 0 {
			return 0, 0, interaction.Errorf(interaction.InvalidRequest, "after %q: want the seq of an event (a whole number, 0 or more)", v)
		}
	}
	limit = store.FeedDefault
	if v := q.Get("limit"); v != "" {
		limit, err = strconv.Atoi(v)
		if err != nil || limit < 1 || limit > store.FeedMax {
			return 0, 0, interaction.Errorf(interaction.InvalidRequest, "limit %q: want a whole number from 1 to %d", v, store.FeedMax)
		}
	}
	return after, limit, nil
}
