package blocks

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/slackid"
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
		s.Confirm = menuConfirm(v.Request.Questions[i])
		return nil, []slack.BlockElement{s}
	},
	interaction.KindMultiMenu: func(v View, i int, opts []*slack.OptionBlockObject) ([][]slack.BlockElement, []slack.BlockElement) {
		m := slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic, plain("Choose…"), selectID(v, i), opts...)
		m.InitialOptions = initialOptions(v, i, opts)
		return nil, []slack.BlockElement{m}
	},
	interaction.KindButtons: buttons,
	interaction.KindCheckbox: func(v View, i int, opts []*slack.OptionBlockObject) ([][]slack.BlockElement, []slack.BlockElement) {
		c := slack.NewCheckboxGroupsBlockElement(selectID(v, i), opts...)
		c.InitialOptions = initialOptions(v, i, opts)
		return nil, []slack.BlockElement{c}
	},
}

// buttons draws one button per option, value its index, in rows of
// slackid.ButtonsPerRow: the last row leads the controls block. Each
// has its option's style (a veto is danger; the plan-review approve
// option primary unless styled) and confirmation dialog.
func buttons(v View, i int, opts []*slack.OptionBlockObject) ([][]slack.BlockElement, []slack.BlockElement) {
	q := v.Request.Questions[i]
	chosen := optionIndexes(q, progressAt(v, i).Selected)
	var rows [][]slack.BlockElement
	for j, o := range opts {
		text := o.Text
		if slices.Contains(chosen, j) { // a button keeps no state: the message shows the pick
			text = plain(clip("✓ "+o.Text.Text, maxOptionText))
		}
		b := slack.NewButtonBlockElement(ActionID(Ref{AskID: v.AskID, Rev: v.Rev, Question: i, Kind: KindSelect, Item: j + 1}), o.Value, text)
		o := q.Options[j]
		b.Style = slack.Style(o.ButtonStyle())
		if b.Style == "" && isPlanReview(q) && o.Label == q.Intent.Approve {
			b.Style = slack.StylePrimary
		}
		if o.Confirm != nil {
			b.Confirm = confirmObject(o)
		}
		if j%slackid.ButtonsPerRow == 0 {
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
	case slack.ActionType(slack.MultiOptTypeStatic), slack.ActionType(slack.METCheckboxGroups):
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

// confirmObject is the confirmation dialog of option o: its own texts, or
// "Are you sure?" naming the option.
func confirmObject(o interaction.Option) *slack.ConfirmationBlockObject {
	c := *o.Confirm
	label := clip(oneLine(o.Label), 200)
	title := cmpOr(c.Title, "Are you sure?")
	text := cmpOr(c.Text, "You chose “"+label+"”. This counts as your answer.")
	yes := cmpOr(c.Confirm, clip("Yes, "+oneLine(o.Label), slackid.MaxConfirmButton))
	no := cmpOr(c.Deny, "Go back")
	out := &slack.ConfirmationBlockObject{Title: plain(clip(title, slackid.MaxConfirmTitle)), Text: plain(clip(text, slackid.MaxConfirmText)),
		Confirm: plain(clip(yes, slackid.MaxConfirmButton)), Deny: plain(clip(no, slackid.MaxConfirmButton))}
	if o.ButtonStyle() == interaction.StyleDanger {
		out.Style = slack.StyleDanger
	}
	return out
}

// menuConfirm is the dialog of a select menu one of whose options asks
// for one: Slack confirms a menu's pick, not one option's, so every pick
// of it is confirmed, with the first such option's texts.
func menuConfirm(q interaction.Question) *slack.ConfirmationBlockObject {
	for _, o := range q.Options {
		if o.Confirm != nil {
			c := confirmObject(o)
			if *o.Confirm == (interaction.Confirm{}) {
				c.Text = plain("Your pick counts as your answer.")
				c.Confirm = plain("Yes")
			}
			return c
		}
	}
	return nil
}

// cmpOr is a unless it is blank (Slack refuses blank texts), else b.
func cmpOr(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}
