package asks

import (
	"context"
	"fmt"

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
