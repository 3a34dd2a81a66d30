package interaction

import (
	"fmt"
	"slices"
	"sort"
)

// This file is the one place that says what kind of control answers a
// question, what each kind accepts and how its picks become labels. The
// renderer (package blocks) draws each kind and reads its payloads; the
// lifecycle (package asks), the front doors and their schemas ask here.
// ARCHITECTURE.md "a new question kind" walks through adding one.

// Kind is the control a question is answered with, decided by KindOf.
type Kind string

// The kinds of question.
const (
	KindText      Kind = "text"       // no options: free text ("Answer…")
	KindMenu      Kind = "menu"       // one pick from a select menu
	KindMultiMenu Kind = "multi-menu" // several picks from a multi-select menu
)

// KindSpec is what a kind is: how many labels it picks, whether a pick is
// an act of its own (a button tap, with no state a Submit could read
// later), and the most options it draws.
type KindSpec struct {
	Options    bool // answered by picking options
	Multi      bool // several labels at once
	Tap        bool // each pick is a click: the message keeps no state of it
	MaxOptions int  // most options it can draw (0: no options)
}

// Kinds is the table of kinds. A select menu holds 100 options.
var Kinds = map[Kind]KindSpec{
	KindText:      {},
	KindMenu:      {Options: true, MaxOptions: MaxOptions},
	KindMultiMenu: {Options: true, Multi: true, MaxOptions: MaxOptions},
}

// KindOf returns the kind of question i of r: its options and whether it
// is alone in its ask decide.
func KindOf(r Request, i int) Kind {
	q := r.Questions[i]
	switch {
	case len(q.Options) == 0:
		return KindText
	case q.MultiSelect:
		return KindMultiMenu
	}
	return KindMenu
}

// Spec returns the KindSpec of question i of r.
func Spec(r Request, i int) KindSpec { return Kinds[KindOf(r, i)] }

// OneTap reports whether one pick answers r: it is one question of one
// pick with options. For an ask one person answers the pick ends it.
func OneTap(r Request) bool {
	return len(r.Questions) == 1 && len(r.Questions[0].Options) > 0 && !Spec(r, 0).Multi
}

// OneAction reports whether any one act on r (a pick, a skip, a text)
// answers it: one question of one pick, or of free text.
func OneAction(r Request) bool {
	return len(r.Questions) == 1 && !Spec(r, 0).Multi
}

// TapResponds reports whether a tap on r is a whole response even on an
// ask that collects several people's: a one-pick question alone, of a
// kind whose picks are taps, needs no Submit (tapping again replaces it).
func TapResponds(r Request) bool {
	return OneAction(r) && Spec(r, 0).Tap
}

// Pick returns the labels of options idx (indexes) of question i of r, in
// option order, once each, never nil. It refuses an index that is not an
// option and several for a question of one pick.
func Pick(r Request, i int, idx []int) ([]string, error) {
	if i < 0 || i >= len(r.Questions) {
		return nil, fmt.Errorf("question %d out of range", i)
	}
	q := r.Questions[i]
	if !Spec(r, i).Multi && len(idx) > 1 {
		return nil, fmt.Errorf("%d options chosen for single-choice question %d", len(idx), i)
	}
	for _, j := range idx {
		if j < 0 || j >= len(q.Options) {
			return nil, fmt.Errorf("option %d of question %d", j, i)
		}
	}
	return optionLabels(q, idx), nil
}

// PickLenient is Pick for a Submit's message state, which a client sends
// as is: indexes that are not options are dropped and a question of one
// pick keeps the first. ok is false when idx named only impossible values.
func PickLenient(r Request, i int, idx []int) (labels []string, ok bool) {
	q := r.Questions[i]
	var good []int
	for _, j := range idx {
		if j >= 0 && j < len(q.Options) {
			good = append(good, j)
		}
	}
	if len(good) == 0 && len(idx) > 0 {
		return nil, false
	}
	if !Spec(r, i).Multi && len(good) > 1 {
		good = good[:1]
	}
	return optionLabels(q, good), true
}

func optionLabels(q Question, idx []int) []string {
	idx = slices.Clone(idx)
	sort.Ints(idx)
	out := []string{}
	for k, j := range idx {
		if k > 0 && idx[k-1] == j {
			continue
		}
		out = append(out, q.Options[j].Label)
	}
	return out
}

// KindFields is the JSON Schema of the question fields ("question") and
// option fields ("option") that choose and shape a question's kind, with
// descriptions written for a model: the MCP tool's input schema takes
// them from here, so that a kind's fields are described once.
var KindFields = map[string]map[string]string{
	"question": {
		"multiSelect": `{"type": "boolean", "description": "Allow choosing several options. Default false."}`,
	},
	"option": {},
}

// validateKind checks that question i of r fits the kind it gets.
func validateKind(r Request, i int) error {
	q := r.Questions[i]
	if k := KindOf(r, i); Kinds[k].Options && len(q.Options) > Kinds[k].MaxOptions {
		return Errorf(InvalidQuestion, "questions[%d] (%q): %d options: at most %d fit as %s", i, q.ID, len(q.Options), Kinds[k].MaxOptions, k)
	}
	return nil
}
