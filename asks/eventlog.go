package asks

import (
	"context"
	"fmt"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// Events returns the audit trail of ask id, in order; NOT_FOUND for an
// unknown ask (an ask stored before events were kept has none).
func (s *Service) Events(ctx context.Context, id string) ([]store.Event, error) {
	// s.Get: another API key's ask is NOT_FOUND here too.
	if _, err := s.Get(ctx, id); err != nil {
		return nil, fmt.Errorf("asks events %s: %w", id, err)
	}
	evs, err := s.store.Events(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("asks events %s: %w", id, err)
	}
	return evs, nil
}

// Feed returns the events of every ask after seq after, in order, at most
// store.FeedLimit(limit): the feed a log shipper follows.
func (s *Service) Feed(ctx context.Context, after int64, limit int) ([]store.Event, error) {
	if interaction.CallerFrom(ctx) != nil {
		return nil, interaction.Errorf(interaction.Forbidden, "the feed of every ask's events is for the server's token (SLACKASK_API_TOKEN), not an API key")
	}
	evs, err := s.store.Feed(ctx, after, limit)
	if err != nil {
		return nil, fmt.Errorf("asks feed: %w", err)
	}
	return evs, nil
}

// WaitFeed is Feed that, when no event comes after after, waits up to
// wait for one to be committed (by any process sharing the store: it
// watches the store's writes) and returns what came then; none when wait
// passes or ctx ends first, which is not an error.
func (s *Service) WaitFeed(ctx context.Context, after int64, limit int, wait time.Duration) ([]store.Event, error) {
	if wait <= 0 {
		return s.Feed(ctx, after, limit)
	}
	wrote := make(chan struct{}, 1)
	stop := s.store.Watch(func(store.Change) {
		select {
		case wrote <- struct{}{}:
		default:
		}
	})
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		// Watching started first: an event committed after this read
		// wakes the loop.
		evs, err := s.Feed(ctx, after, limit)
		switch {
		case len(evs) > 0:
			return evs, nil
		case err != nil && ctx.Err() != nil:
			return nil, nil
		case err != nil:
			return nil, err
		}
		select {
		case <-wrote:
		case <-ctx.Done():
			return nil, nil
		}
	}
}
