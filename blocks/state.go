package blocks

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/slack-go/slack"
)

// SelectionsFromState reads the whole message state of a block_actions or
// submit payload and returns, for each question whose select block belongs
// to this ask AND to revision v.Rev, the labels chosen (looked up by option
// value = index; unknown/out-of-range indexes ignored), in option order. A
// select that is present but empty (cleared) maps to an empty slice.
// Questions absent from the state are absent from the map. state may be nil.
func SelectionsFromState(v View, state *slack.BlockActionStates) map[int][]string {
	out := map[int][]string{}
	if state == nil {
		return out
	}
	for bid, actions := range state.Values {
		q, a, ok := selectState(v, bid, actions)
		if !ok {
			continue
		}
		values := selectedValues(a)
		if !v.Request.Questions[q].MultiSelect && len(values) > 1 {
			values = values[:1]
		}
		var idx []int
		for _, s := range values {
			if j, err := optionIndex(s, len(v.Request.Questions[q].Options)); err == nil {
				idx = append(idx, j)
			}
		}
		out[q] = labels(v, q, idx)
	}
	return out
}

// selectState returns the state of the select of question q when block bid
// is the controls block of a question with options of this ask and
// revision.
func selectState(v View, bid string, actions map[string]slack.BlockAction) (q int, a slack.BlockAction, ok bool) {
	r, err := ParseBlockID(bid)
	if err != nil || r.AskID != v.AskID || r.Rev != v.Rev || r.Kind != kindControls ||
		r.Question < 0 || r.Question >= len(v.Request.Questions) || len(v.Request.Questions[r.Question].Options) == 0 {
		return 0, a, false
	}
	a, ok = actions[ActionID(Ref{AskID: v.AskID, Rev: v.Rev, Question: r.Question, Kind: KindSelect})]
	return r.Question, a, ok
}

// selectedValues returns the option values of a select's state or action:
// selected_options, else selected_option ("" values dropped).
func selectedValues(a slack.BlockAction) []string {
	var vs []string
	for _, o := range a.SelectedOptions {
		vs = append(vs, o.Value)
	}
	if len(vs) == 0 && a.SelectedOption.Value != "" {
		vs = append(vs, a.SelectedOption.Value)
	}
	return vs
}

// LabelsFromAction turns one action of question q's select (a
// static_select, multi_static_select, or the plan-review approve button)
// into the labels chosen, in option order. A cleared select gives an empty
// slice. It returns an error for a nil action, an action id that is not
// this ask's select of question q (wrapping ErrNotOurs when not ours at
// all), another element type, an option value that is not an index of q's
// options, or several values for a single-select question. The revision is
// not checked: option indexes do not change between revisions.
func LabelsFromAction(v View, q int, a *slack.BlockAction) ([]string, error) {
	if err := checkSelectAction(v, q, a); err != nil {
		return nil, err
	}
	values, err := actionValues(a)
	if err != nil {
		return nil, err
	}
	question := v.Request.Questions[q]
	if !question.MultiSelect && len(values) > 1 {
		return nil, fmt.Errorf("blocks: %d options chosen for single-select question %d", len(values), q)
	}
	idx := make([]int, 0, len(values))
	for _, s := range values {
		j, err := optionIndex(s, len(question.Options))
		if err != nil {
			return nil, err
		}
		idx = append(idx, j)
	}
	return labels(v, q, idx), nil
}

// checkSelectAction checks that a is an action on the select (or approve
// button) of question q of this ask.
func checkSelectAction(v View, q int, a *slack.BlockAction) error {
	if a == nil {
		return errors.New("blocks: no action")
	}
	if q < 0 || q >= len(v.Request.Questions) {
		return fmt.Errorf("blocks: question %d out of range", q)
	}
	r, err := ParseActionID(a.ActionID)
	if err != nil {
		return err
	}
	if r.AskID != v.AskID || r.Question != q || r.Kind != KindSelect {
		return fmt.Errorf("blocks: action %q is not the select of question %d of ask %q", a.ActionID, q, v.AskID)
	}
	return nil
}

// actionValues returns the option values an action carries.
func actionValues(a *slack.BlockAction) ([]string, error) {
	switch a.Type {
	case slack.ActionType(slack.OptTypeStatic):
		if a.SelectedOption.Value == "" {
			return nil, nil
		}
		return []string{a.SelectedOption.Value}, nil
	case slack.ActionType(slack.MultiOptTypeStatic):
		vs := make([]string, len(a.SelectedOptions))
		for i, o := range a.SelectedOptions {
			vs[i] = o.Value
		}
		return vs, nil
	case slack.ActionType(slack.METButton):
		return []string{a.Value}, nil
	}
	return nil, fmt.Errorf("blocks: unexpected element type %q", a.Type)
}

// optionIndex parses an option value: the canonical decimal index of one
// of n options.
func optionIndex(s string, n int) (int, error) {
	j, err := strconv.Atoi(s)
	if err != nil || j < 0 || j >= n || strconv.Itoa(j) != s {
		return 0, fmt.Errorf("blocks: option value %.20q is not an option index", s)
	}
	return j, nil
}

// labels returns the labels of options idx of question q, in option order,
// once each; never nil.
func labels(v View, q int, idx []int) []string {
	sort.Ints(idx)
	out := []string{}
	for i, j := range idx {
		if i > 0 && idx[i-1] == j {
			continue
		}
		out = append(out, v.Request.Questions[q].Options[j].Label)
	}
	return out
}
