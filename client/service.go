package client

import (
	"context"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/slackid"
)

// Service returns c as an interaction.AskService, so that front doors
// (like `slackask mcp`) can run against a remote `slackask serve`. Its Wait
// long-polls in PollWait slices until the ask ends or ctx is done, and
// returns the ask as it then is. It is an interaction.Checker: what the
// server would refuse without asking Slack is refused before any request.
func (c *Client) Service() interaction.AskService { return remote{c} }

type remote struct{ c *Client }

// CheckAsk checks in as a slackask server does before creating it:
// interaction.ValidateInput, then Slack's id syntax (slackid.Check).
func (remote) CheckAsk(in interaction.AskInput) error { return slackid.Check(in) }

func (r remote) Create(ctx context.Context, in interaction.AskInput) (interaction.Ask, error) {
	return r.c.Create(ctx, in, 0)
}

func (r remote) Get(ctx context.Context, id string) (interaction.Ask, error) {
	return r.c.Get(ctx, id, 0)
}

func (r remote) Wait(ctx context.Context, id string) (interaction.Ask, error) {
	for {
		wait := PollWait
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		ask, err := r.c.Get(ctx, id, max(wait, 0))
		if err != nil {
			if ctx.Err() != nil {
				return r.c.Get(context.WithoutCancel(ctx), id, 0)
			}
			return ask, err
		}
		if ask.Status.Ended() || ctx.Err() != nil {
			return ask, nil
		}
	}
}

func (r remote) Withdraw(ctx context.Context, id string) (interaction.Ask, error) {
	return r.c.Withdraw(ctx, id)
}

func (r remote) List(ctx context.Context, f interaction.ListFilter) ([]interaction.Ask, error) {
	return r.c.List(ctx, f)
}
