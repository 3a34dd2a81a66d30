package blocks

import (
	"errors"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
)

// SelectionsFromState reads the whole message state of a block_actions or
// submit payload and returns, for each question whose element belongs
// to this ask AND to revision v.Rev, the labels chosen (StatePicks, then
// interaction.PickLenient), in option order. An element that is present
// but empty (cleared) maps to an empty slice. Questions absent from the
// state are absent from the map. state may be nil.
func SelectionsFromState(v View, state *slack.BlockActionStates) map[int][]string {
	out := map[int][]string{}
	for q, idx := range StatePicks(v.AskID, v.Rev, state) {
		if q >= len(v.Request.Questions) || len(v.Request.Questions[q].Options) == 0 {
			continue
		}
		if labels, ok := interaction.PickLenient(v.Request, q, idx); ok {
			out[q] = labels
		} else {
			out[q] = []string{}
		}
	}
	return out
}

// LabelsFromAction turns one action on question q's element (a select,
// or a button of its options) into the labels chosen, in option order
// (ActionOptions, then interaction.Pick). A cleared select gives an empty
// slice. It returns an error for a nil action, an action id that is not
// this ask's element of question q (wrapping ErrNotOurs when not ours at
// all), another element type, or options the question does not have.
// The revision is not checked: option indexes do not change between
// revisions.
func LabelsFromAction(v View, q int, a *slack.BlockAction) ([]string, error) {
	if a == nil {
		return nil, errors.New("blocks: no action")
	}
	if q < 0 || q >= len(v.Request.Questions) {
		return nil, fmt.Errorf("blocks: question %d out of range", q)
	}
	r, err := ParseActionID(a.ActionID)
	if err != nil {
		return nil, err
	}
	if r.AskID != v.AskID || r.Question != q || r.Kind != KindSelect {
		return nil, fmt.Errorf("blocks: action %q is not the select of question %d of ask %q", a.ActionID, q, v.AskID)
	}
	idx, err := ActionOptions(a)
	if err != nil {
		return nil, err
	}
	labels, err := interaction.Pick(v.Request, q, idx)
	if err != nil {
		return nil, fmt.Errorf("blocks: %w", err)
	}
	return labels, nil
}
