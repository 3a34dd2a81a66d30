package main

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/internal/clock"
)

// storePinger is a store that can say whether its database answers
// (store/postgres's Store).
type storePinger interface {
	Ping(ctx context.Context) error
}

// storeGate is what watchStore tells: the bot's Socket Mode connections
// (bot.Bot's StoreDown).
type storeGate interface {
	StoreDown(err error) bool
}

// How watchStore judges the database: a ping every storePingEvery, each
// given storePingTimeout; storeDownAfter failures in a row cut the replica
// off, storeUpAfter answers in a row take it back. One slow ping (a
// stalled connection made again) does not cut it off; a database gone for
// more than about a second and a half does.
const (
	storePingEvery   = 500 * time.Millisecond
	storePingTimeout = time.Second
	storeDownAfter   = 2
	storeUpAfter     = 2
)

// watchStore pings the store until ctx ends and closes g while the
// database does not answer: a replica that cannot store a click then gives
// up its Socket Mode connections, so Slack sends the clicks to replicas
// that can, and /readyz says not ready. It opens g again once the database
// answers.
func watchStore(ctx context.Context, p storePinger, g storeGate, c clock.Clock, log zerolog.Logger) {
	if c == nil {
		c = clock.Real{}
	}
	fails, oks := 0, 0
	for {
		pctx, cancel := context.WithTimeout(ctx, storePingTimeout)
		err := p.Ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			fails, oks = fails+1, 0
			if fails >= storeDownAfter && g.StoreDown(err) {
				log.Error().Err(err).Msg("the database does not answer: socket mode connections given up, not ready, until it does")
			}
		} else {
			fails, oks = 0, oks+1
			if oks >= storeUpAfter && g.StoreDown(nil) {
				log.Info().Msg("the database answers again: socket mode connections reopen")
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-c.After(storePingEvery):
		}
	}
}
