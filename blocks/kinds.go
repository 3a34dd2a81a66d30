package blocks

import (
	"errors"
	"strconv"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
)

// This file draws each kind of question (interaction.KindOf) and reads
// its payloads back: the Slack half of the kind table.

// A drawer draws the options of question i of v (opts, see menuOptions):
// rows are actions blocks of option elements shown before the question's
// controls block, elems the elements that block starts with.
type drawer func(v View, i int, opts []*slack.OptionBlockObject) (rows [][]slack.BlockElement, elems []slack.BlockElement)

// drawers draws each kind with options; a kind without an entry has no
// option element (free text).
var drawers = map[interaction.Kind]drawer{
	interaction.KindMenu: func(v View, i int, opts []*slack.OptionBlockObject) ([][]slack.BlockElement, []slack.BlockElement) {
		s := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("Choose…"), selectID(v, i), opts...)
		if initial := initialOptions(v, i, opts); len(initial) > 0 {
			s.InitialOption = initial[0]
		}
		return nil, []slack.BlockElement{s}
	},
	interaction.KindMultiMenu: func(v View, i int, opts []*slack.OptionBlockObject) ([][]slack.BlockElement, []slack.BlockElement) {
		m := slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic, plain("Choose…"), selectID(v, i), opts...)
		m.InitialOptions = initialOptions(v, i, opts)
		return nil, []slack.BlockElement{m}
	},
	interaction.KindButtons: buttons,
}

// buttons draws one button per option, value its index, in rows of
// interaction.ButtonsPerRow: the last row leads the controls block. The
// plan-review approve option is primary.
func buttons(v View, i int, opts []*slack.OptionBlockObject) ([][]slack.BlockElement, []slack.BlockElement) {
	q := v.Request.Questions[i]
	var rows [][]slack.BlockElement
	for j, o := range opts {
		b := slack.NewButtonBlockElement(ActionID(Ref{AskID: v.AskID, Rev: v.Rev, Question: i, Kind: KindSelect, Item: j + 1}), o.Value, o.Text)
		if isPlanReview(q) && q.Options[j].Label == q.Intent.Approve {
			b.Style = slack.StylePrimary
		}
		if j%interaction.ButtonsPerRow == 0 {
			rows = append(rows, nil)
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], b)
	}
	return rows[:len(rows)-1], rows[len(rows)-1]
}

func selectID(v View, i int) string {
	return ActionID(Ref{AskID: v.AskID, Rev: v.Rev, Question: i, Kind: KindSelect})
}

// initialOptions are the options of question i the message shows chosen.
func initialOptions(v View, i int, opts []*slack.OptionBlockObject) []*slack.OptionBlockObject {
	var out []*slack.OptionBlockObject
	for _, j := range optionIndexes(v.Request.Questions[i], progressAt(v, i).Selected) {
		out = append(out, opts[j])
	}
	return out
}

// ActionOptions returns the option indexes one action on a question's
// element carries: a select's selected option(s), or a button's value.
// An error for another element type or a value that is not an option
// index (the caller checks the indexes against the question with
// interaction.Pick).
func ActionOptions(a *slack.BlockAction) ([]int, error) {
	var values []string
	switch a.Type {
	case slack.ActionType(slack.OptTypeStatic):
		if a.SelectedOption.Value != "" {
			values = []string{a.SelectedOption.Value}
		}
	case slack.ActionType(slack.MultiOptTypeStatic):
		for _, o := range a.SelectedOptions {
			values = append(values, o.Value)
		}
	case slack.ActionType(slack.METButton):
		values = []string{a.Value}
	default:
		return nil, errors.New("blocks: unexpected element type " + strconv.Quote(clip(string(a.Type), 40)))
	}
	out := make([]int, 0, len(values))
	for _, s := range values {
		j, ok := parseIndex(s)
		if !ok {
			return nil, errors.New("blocks: option value " + strconv.Quote(clip(s, 40)) + " is not an option index")
		}
		out = append(out, j)
	}
	return out, nil
}

// StatePicks returns, per question index, the option indexes the elements
// of revision rev of ask askID hold (in their question's controls block) in a Submit's message state
// (selected_options, else selected_option; values that are not option
// indexes as -1, which interaction.PickLenient drops). Elements of other
// asks or revisions are left out.
func StatePicks(askID string, rev int, state *slack.BlockActionStates) map[int][]int {
	out := map[int][]int{}
	if state == nil {
		return out
	}
	for bid, actions := range state.Values {
		for id, a := range actions {
			ref, err := ParseActionID(id)
			if err != nil || ref.AskID != askID || ref.Rev != rev || ref.Kind != KindSelect || ref.Question < 0 {
				continue
			}
			if b, err := ParseBlockID(bid); err != nil || b.Kind != kindControls || b.AskID != askID || b.Rev != rev || b.Question != ref.Question {
				continue // an element is read in the block it was drawn in
			}
			var idx []int
			for _, o := range a.SelectedOptions {
				idx = append(idx, index(o.Value))
			}
			if len(idx) == 0 && a.SelectedOption.Value != "" {
				idx = append(idx, index(a.SelectedOption.Value))
			}
			out[ref.Question] = idx
		}
	}
	return out
}

// parseIndex parses an option value, the canonical decimal index of an
// option.
func parseIndex(s string) (int, bool) {
	j, err := strconv.Atoi(s)
	if err != nil || j < 0 || strconv.Itoa(j) != s {
		return 0, false
	}
	return j, true
}

func index(s string) int {
	if j, ok := parseIndex(s); ok {
		return j
	}
	return -1
}
