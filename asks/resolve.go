package asks

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/backoff"
)

// errBeingPosted: the dispatcher found an unposted ask that this process
// is posting or resolving right now; it tries again later.
var errBeingPosted = errors.New("asks: the ask is being posted by this process")

// resolveTries bounds the rounds of one resolution; an ask still
// unresolved after them is resolved by the next start's recovery (or by a
// retried create with its idempotency key).
const resolveTries = 8

// posting holds the ids of the asks this process is posting or resolving
// right now, so that one ask is never posted by two of its goroutines: a
// retried create with the same idempotency key leaves an ask alone while
// its first post is in flight.
type posting struct {
	mu sync.Mutex
	m  map[string]bool
}

// claim marks id as being posted; false when it already is.
func (p *posting) claim(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m[id] {
		return false
	}
	if p.m == nil {
		p.m = map[string]bool{}
	}
	p.m[id] = true
	return true
}

func (p *posting) release(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, id)
}

// resolvePost settles an ask whose post's outcome is unknown (rec is not
// Posted): in the background it looks for the ask's message and adopts it, or,
// when there is none, posts it (a pending ask only) — once for all the
// callers that ask for it at the same time. An ask being posted or
// resolved by this process already is left to that.
func (s *Service) resolvePost(rec Record) { s.settle(rec, true) }

// settle is resolvePost; without mayPost a message that is not found is
// left to whoever may still be posting it (or to the dispatcher).
func (s *Service) settle(rec Record, mayPost bool) {
	if rec.Posted() || !s.posting.claim(rec.ID) {
		return
	}
	s.bg.Go(func() {
		defer s.posting.release(rec.ID)
		r := backoff.Retry{Pause: &backoff.Backoff{Min: 500 * time.Millisecond, Max: 30 * time.Second}, Tries: resolveTries,
			OnRetry: func(try int, err error, _ time.Duration) {
				s.log.Warn().Err(err).Str("ask", rec.ID).Int("try", try).Msg("resolving the ask's post")
			}}
		err := r.Do(s.life, func(int) error {
			done, err := s.resolveOnce(rec.ID, mayPost)
			if done {
				return nil
			}
			return cmp.Or(err, errNotSettled)
		})
		// Stopping (ErrInterrupted): the dispatcher settles it (postLeft).
		if err != nil && !errors.Is(err, backoff.ErrInterrupted) {
			s.log.Error().Err(err).Str("ask", rec.ID).Msg("could not find out whether the ask's message was posted; recovery retries at the next start")
		}
	})
}

// errNotSettled: a round of settle that neither settled the ask nor said
// why.
var errNotSettled = errors.New("asks: the ask's post is not settled")

// resolveLeft settles an ask a retried create found not posted (its
// creator may have died between the post and storing its place): its message
// is looked for and adopted at once, but posted only once no post of it
// can still be in flight anywhere (a post is bounded by PostTimeout), so
// that a retry arriving at another replica while the first one posts
// never posts a second message.
func (s *Service) resolveLeft(rec Record) {
	if !rec.Posted() && rec.PostQueue == "" { // a queued ask is posted by its queue
		s.settle(rec, s.now().Sub(rec.CreatedAt) > s.cfg.PostTimeout+5*time.Second)
	}
}

// resolveOnce makes one round of settle; done once the ask has a message,
// ended without one, is gone, or (without mayPost) was not found.
func (s *Service) resolveOnce(id string, mayPost bool) (done bool, err error) {
	ctx, cancel := context.WithTimeout(s.life, 2*s.cfg.PostTimeout)
	defer cancel()
	rec, err := s.store.Get(ctx, id)
	if isNotFound(err) {
		return true, nil
	}
	if err != nil || rec.Posted() {
		return err == nil, err
	}
	at, err := s.surface.FindPosted(ctx, rec)
	if err != nil {
		return false, err // posting without knowing could post twice
	}
	switch {
	case at.Ref != "":
		_, err = s.adopt(ctx, rec, at)
		return err == nil, err
	case rec.Status.Ended() || !mayPost:
		return true, nil // nothing to adopt; nothing to post (now)
	}
	rec, err = s.post(ctx, rec)
	switch {
	case err == nil:
		s.log.Info().Str("ask", id).Msg("the ask's message was not found; posted it")
		return true, nil
	case errors.Is(err, ErrOutcomeUnknown):
		return false, err
	}
	// Slack refused the post: the caller holds the ask already, so it ends
	// (aborted, with Slack's error) rather than vanishing.
	_, eerr := s.end(ctx, id, ending{
		status: interaction.StatusAborted,
		err:    interaction.Errorf(interaction.SlackError, "the question could not be posted: %v", err),
	})
	if eerr != nil && !errors.Is(eerr, ErrEnded) {
		return false, eerr
	}
	return true, nil
}

// adopt stores at, found by the surface, as the main message of rec, and
// brings that message in step with the record.
func (s *Service) adopt(ctx context.Context, rec Record, at Posted) (Record, error) {
	// (Update returns a zero record with errNoChange: rec keeps the id.)
	out, err := s.store.Update(ctx, rec.ID, func(r *Record) error {
		if r.Posted() {
			return errNoChange
		}
		setPosted(r, at)
		r.Rev, r.Synced = r.Rev+1, false
		return nil
	})
	if errors.Is(err, errNoChange) {
		return s.store.Get(ctx, rec.ID)
	}
	if err != nil {
		return rec, err
	}
	rec = out
	s.log.Info().Str("ask", rec.ID).Str("ref", at.Ref).Msg("adopted the ask's message")
	s.syncer.mark(rec)
	return s.storePermalink(ctx, rec), nil
}

// storePermalink gets the link to rec's message and stores it in the ask;
// rec as it then stands (unchanged when there is no link: a link is a
// convenience and its failure is only logged).
func (s *Service) storePermalink(ctx context.Context, rec Record) Record {
	if rec.Permalink != "" {
		return rec
	}
	link := s.permalink(ctx, rec, Posted{Channel: rec.Channel, TS: rec.TS, Ref: rec.Ref}, 10*time.Second)
	if link == "" {
		return rec
	}
	out, err := s.store.Update(context.WithoutCancel(ctx), rec.ID, func(r *Record) error {
		if r.Permalink != "" {
			return errNoChange
		}
		r.Permalink = link
		return nil
	})
	if err != nil {
		if !errors.Is(err, errNoChange) {
			s.log.Warn().Err(err).Str("ask", rec.ID).Msg("could not store the message's permalink")
		}
		rec.Permalink = link
		return rec
	}
	return out
}

// fillPermalink stores the link of an ask that has its message but no link:
// the process that posted it died between storing its place and storing
// the link, or Slack could not give one then. An ask this process is posting
// is left alone: that post stores its link itself.
func (s *Service) fillPermalink(ctx context.Context, rec Record) Record {
	if !rec.Posted() || rec.Permalink != "" || !s.posting.claim(rec.ID) {
		return rec
	}
	defer s.posting.release(rec.ID)
	return s.storePermalink(ctx, rec)
}

// permalinkWait bounds the wait for a link that is stored together with
// the message's place: it holds that store write back, and a click on the
// message meanwhile waits for that place (notPostedWaits × notPostedPause,
// 2 s), so it stays well inside that. A link not had in time is filled in
// later (fillPermalink).
const permalinkWait = time.Second

// setPermalink sets r's link when it has none and link is one.
func setPermalink(r *Record, link string) {
	if r.Permalink == "" {
		r.Permalink = link
	}
}

// permalink asks the surface, once, waiting at most wait, for a link to
// the message at; "" when it cannot link (the failure is logged: a link
// is a convenience and never fails the ask).
func (s *Service) permalink(ctx context.Context, rec Record, at Posted, wait time.Duration) string {
	pl, ok := s.surface.(Permalinker)
	if !ok || at.Ref == "" && at.TS == "" { // TS alone: posted before references were kept
		return ""
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
	defer cancel()
	link, err := pl.Permalink(ctx, rec, at)
	if err != nil {
		s.log.Warn().Err(err).Str("ask", rec.ID).Msg("could not get the message's permalink")
		return ""
	}
	return link
}
