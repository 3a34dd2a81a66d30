package dsh

import (
	"context"
	"strings"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
)

// rebuild restores, from the ask history, what the bridge knows of each dsh
// session: its thread root (the oldest top-level ask whose agent.id is
// "dsh:<sessionId>", in the bridge's channel) and its title (the newest
// agent name other than DefaultTitle). It runs before the first connect, so
// that questions replayed after a slackask restart go to their old thread.
// The history is bounded by the service's retention (and by historyMaxAsks).
func (b *Bridge) rebuild(ctx context.Context) error {
	roots := map[string]root{}
	titles := map[string]string{}
	n := 0
	err := b.eachAsk(ctx, "", func(a interaction.Ask) {
		sid, ok := sessionOf(a)
		if !ok {
			return
		}
		n++
		if _, has := titles[sid]; !has && a.Agent.Name != "" && a.Agent.Name != DefaultTitle {
			titles[sid] = a.Agent.Name // newest first: the first seen is the latest
		}
		if a.TS != "" && a.ThreadTS == "" && b.inChannel(a) {
			roots[sid] = root{channel: a.Channel, ts: a.TS} // older ones overwrite newer ones
		}
	})
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for sid, rt := range roots {
		if s := b.sessionLocked(sid); s.root.ts == "" {
			s.root = rt
		}
	}
	for sid, t := range titles {
		if s := b.sessionLocked(sid); s.title == "" {
			s.title = t
		}
	}
	b.rebuilt = true
	b.log.Info().Int("asks", n).Int("threads", len(roots)).Msg("dsh: session threads rebuilt from the ask history")
	return nil
}

// sessionOf returns the dsh session of an ask the bridge created.
func sessionOf(a interaction.Ask) (string, bool) {
	if a.Agent == nil || !strings.HasPrefix(a.Agent.ID, AgentPrefix) {
		return "", false
	}
	sid := strings.TrimPrefix(a.Agent.ID, AgentPrefix)
	return sid, sid != ""
}

// eachAsk calls fn for every ask of the history with the status (""
// for all), newest first, paging with ListFilter.Before. Asks that share a
// creation instant across a page boundary are neither skipped nor repeated.
func (b *Bridge) eachAsk(ctx context.Context, status interaction.Status, fn func(interaction.Ask)) error {
	seen := map[string]bool{}
	var before time.Time
	for len(seen) < historyMaxAsks {
		page, err := b.cfg.Service.List(ctx, interaction.ListFilter{Status: status, Before: before, Limit: historyPageSize})
		if err != nil {
			return err
		}
		fresh := 0
		for _, a := range page {
			if seen[a.ID] {
				continue
			}
			seen[a.ID] = true
			fresh++
			fn(a)
		}
		if len(page) < historyPageSize {
			return nil
		}
		last := page[len(page)-1].CreatedAt
		if fresh > 0 {
			before = last.Add(time.Nanosecond) // include last's instant again: its siblings may not all have fit
		} else {
			before = last // a whole page of one instant, all seen: step past it
		}
	}
	return nil
}

// reconcile runs once per connection: after ReconcileAfter (time for the
// host to replay its pending questions) it withdraws, with the note
// NoteAgentStopped, every pending dsh ask the host did not replay — the
// host settled it (or restarted) while the bridge was not listening, so no
// question/resolved frame will come for it. It gives up when the connection
// drops first (live, which ends with it).
func (b *Bridge) reconcile(ctx, live context.Context, gen uint64, connectedAt time.Time) {
	if !clock.Sleep(live, b.cfg.ReconcileAfter) {
		return
	}
	// Questions still in Create do not know their ask yet; let them finish.
	deadline := time.Now().Add(inflightMaxWait)
	for b.inflight() > 0 {
		if time.Now().After(deadline) {
			b.log.Warn().Msg("dsh: asks are still being created; skipping the reconcile of this connection")
			return
		}
		if !clock.Sleep(live, inflightPollTick) {
			return
		}
	}
	if !b.isConnected(gen) {
		return
	}

	b.mu.Lock()
	tracked := map[string]bool{}
	var gone []string
	for id, q := range b.questions {
		if q.askID != "" {
			tracked[q.askID] = true
		}
		if q.seen != gen && q.resolved == "" {
			gone = append(gone, id)
		}
	}
	b.mu.Unlock()
	for _, id := range gone {
		b.resolve(id, outcomeGone, "not replayed after reconnect")
	}

	var stale []string
	err := b.eachAsk(ctx, interaction.StatusPending, func(a interaction.Ask) {
		if _, ok := sessionOf(a); ok && !tracked[a.ID] && a.CreatedAt.Before(connectedAt) {
			stale = append(stale, a.ID)
		}
	})
	if err != nil {
		if ctx.Err() == nil {
			b.log.Warn().Err(err).Msg("dsh: could not list pending asks to reconcile")
		}
		return
	}
	if !b.isConnected(gen) {
		return
	}
	for _, id := range stale {
		b.log.Info().Str("ask", id).Msg("dsh: the host no longer asks this question")
		b.withdraw(ctx, id, NoteAgentStopped, b.log)
	}
	b.log.Debug().Int("gone", len(gone)).Int("stale", len(stale)).Msg("dsh: reconciled")
}

func (b *Bridge) inflight() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.creating
}
